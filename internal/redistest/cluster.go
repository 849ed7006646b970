package redistest

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Cluster is a private Redis Cluster: masters that share the hash slots
// equally, each with the same number of replicas.
type Cluster struct {
	// Nodes holds every server in the order it was started: the masters
	// first, then the replicas of the first master, then those of the
	// second, and so on. The roles are those at the start; after a
	// failover MasterOf tells the current master of a slot.
	Nodes []*Server

	masters int
	ids     map[string]string // address -> node ID

	rawOnce sync.Once
	raw     *redis.ClusterClient // Set and Del's client
}

// StartCluster starts n cluster-enabled servers, splits the slots between
// them, joins them and waits until every node reports the cluster ok. It
// is StartClusterReplicas(tb, n, 0).
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	return StartClusterReplicas(tb, n, 0)
}

// StartClusterReplicas starts a cluster of masters, each owning an equal
// share of the slots and followed by replicasPerMaster replicas. It
// returns once every node reports cluster_state:ok and knows every other,
// every node sees each replica as the replica of its master, and every
// replica's link to its master is up. The node timeout is 1 s, so a killed
// master with a replica is replaced within a few seconds; while a slot has
// no master the cluster state is fail and every node refuses reads and
// writes (full coverage required, cluster-allow-reads-when-down no).
func StartClusterReplicas(tb testing.TB, masters, replicasPerMaster int) *Cluster {
	tb.Helper()
	if masters < 1 || replicasPerMaster < 0 {
		tb.Fatalf("redistest: a cluster of %d masters with %d replicas each", masters, replicasPerMaster)
	}
	total := masters * (1 + replicasPerMaster)
	c := &Cluster{masters: masters, ids: map[string]string{}}
	tb.Cleanup(func() {
		if c.raw != nil {
			_ = c.raw.Close()
		}
	})
	for range total {
		dir := tb.TempDir()
		c.Nodes = append(c.Nodes, launch(tb, &Server{tb: tb, dir: dir, bus: true, extra: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "1000",
			"--cluster-replica-validity-factor", "0", // any replica may take over, however long its link was down
			"--cluster-replica-no-failover", "no",
			"--cluster-allow-reads-when-down", "no",
			"--repl-diskless-sync-delay", "0", // a replica's first sync starts at once
		}}))
	}
	for i, s := range c.Nodes {
		id, err := DoBulk(s.Addr(), "CLUSTER", "MYID")
		if err != nil || id == "" {
			tb.Fatalf("redistest: CLUSTER MYID: %q, %v", id, err)
		}
		c.ids[s.Addr()] = id
		// Distinct epochs from the start, as redis-cli --cluster create sets them.
		mustOK(tb, s.Addr(), "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1))
	}
	for i, s := range c.Nodes[:masters] {
		lo, hi := i*clusterSlots/masters, (i+1)*clusterSlots/masters-1
		mustOK(tb, s.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi))
	}
	for _, s := range c.Nodes[1:] {
		mustOK(tb, s.Addr(), "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(c.Nodes[0].port))
	}
	waitFor(tb, 20*time.Second, "every cluster node knows every other", func() bool {
		for _, s := range c.Nodes {
			if !clusterOK(s.Addr(), total) {
				return false
			}
		}
		return true
	})
	if replicasPerMaster == 0 {
		return c
	}
	for i := range masters {
		masterID := c.ids[c.Nodes[i].Addr()]
		for _, r := range c.replicasOf(i) {
			waitFor(tb, 10*time.Second, "CLUSTER REPLICATE", func() bool {
				reply, err := Do(r.Addr(), "CLUSTER", "REPLICATE", masterID)
				return err == nil && reply == "+OK"
			})
		}
	}
	waitFor(tb, 30*time.Second, "cluster replicas in place and in sync", func() bool {
		for _, s := range c.Nodes {
			view, ok := clusterView(s.Addr())
			if !ok || !clusterOK(s.Addr(), total) {
				return false
			}
			for i := range masters {
				for _, r := range c.replicasOf(i) {
					if view[c.ids[r.Addr()]].masterID != c.ids[c.Nodes[i].Addr()] {
						return false
					}
				}
			}
		}
		for _, r := range c.Nodes[masters:] {
			if info, err := DoBulk(r.Addr(), "INFO", "replication"); err != nil || !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	return c
}

// replicasOf returns the replicas started for master i.
func (c *Cluster) replicasOf(i int) []*Server {
	r := (len(c.Nodes) - c.masters) / c.masters
	return c.Nodes[c.masters+i*r : c.masters+(i+1)*r]
}

// Addrs returns every node's address, the masters (as started) first.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// URL returns a redis+cluster:// URL naming every node as a seed, the form
// cachekit.Options.RedisURL and the command-line tool accept for a cluster.
func (c *Cluster) URL() string {
	addrs := c.Addrs()
	u := "redis+cluster://" + addrs[0]
	for i, a := range addrs[1:] {
		sep := "&"
		if i == 0 {
			sep = "?"
		}
		u += sep + "addr=" + a
	}
	return u
}

// Masters returns the addresses of the nodes started as masters. After a
// failover some of them may be replicas or dead; MasterOf tells who owns a
// slot now.
func (c *Cluster) Masters() []string { return c.Addrs()[:c.masters] }

// Slot returns the hash slot of key, as a live node computes it.
func (c *Cluster) Slot(tb testing.TB, key string) int {
	tb.Helper()
	for _, s := range c.Nodes {
		if !s.live() {
			continue
		}
		if r, err := Do(s.Addr(), "CLUSTER", "KEYSLOT", key); err == nil && strings.HasPrefix(r, ":") {
			if n, err := strconv.Atoi(r[1:]); err == nil {
				return n
			}
		}
	}
	tb.Fatalf("redistest: no live cluster node answered CLUSTER KEYSLOT")
	return 0
}

// MasterOf returns the address of the master that owns slot according to
// CLUSTER SLOTS of the first live node (not killed, not paused) that
// answers, or "" when none answers or none knows an owner.
func (c *Cluster) MasterOf(slot int) (addr string) {
	for _, s := range c.Nodes {
		if !s.live() {
			continue
		}
		if m, ok := slotOwner(s.Addr(), slot); ok {
			return m
		}
	}
	return ""
}

// KillNode kills the node at addr with SIGKILL.
func (c *Cluster) KillNode(tb testing.TB, addr string) {
	tb.Helper()
	c.node(tb, addr).Kill()
}

// WaitMasterChange waits until a master other than oldAddr owns slot and
// every live node (not killed, not paused) agrees on it and reports
// cluster_state:ok, and returns that master's address. It fails tb when
// limit passes first.
func (c *Cluster) WaitMasterChange(tb testing.TB, slot int, oldAddr string, limit time.Duration) string {
	tb.Helper()
	var got string
	waitFor(tb, limit, fmt.Sprintf("a new master of slot %d", slot), func() bool {
		got = ""
		for _, s := range c.Nodes {
			if !s.live() {
				continue
			}
			info, err := DoBulk(s.Addr(), "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
			m, ok := slotOwner(s.Addr(), slot)
			if !ok || m == oldAddr || (got != "" && m != got) {
				return false
			}
			got = m
		}
		return got != ""
	})
	return got
}

// node returns the server at addr.
func (c *Cluster) node(tb testing.TB, addr string) *Server {
	tb.Helper()
	for _, s := range c.Nodes {
		if s.Addr() == addr {
			return s
		}
	}
	tb.Fatalf("redistest: %s is not a node of the cluster", addr)
	return nil
}

// id returns the node ID of the node at addr.
func (c *Cluster) id(tb testing.TB, addr string) string {
	tb.Helper()
	id, ok := c.ids[addr]
	if !ok {
		tb.Fatalf("redistest: %s is not a node of the cluster", addr)
	}
	return id
}

// clusterOK reports whether the node at addr sees a healthy cluster of n
// nodes. CLUSTER INFO is a bulk reply, so it is read with a raw dial.
func clusterOK(addr string, n int) bool {
	info, err := DoBulk(addr, "CLUSTER", "INFO")
	return err == nil && strings.Contains(info, "cluster_state:ok") &&
		strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", n))
}

// slotOwner returns the address of slot's master in the CLUSTER SLOTS
// reply of the node at addr; ok is false when the node does not answer or
// no range covers the slot.
func slotOwner(addr string, slot int) (owner string, ok bool) {
	v, err := doValue(addr, "CLUSTER", "SLOTS")
	ranges, isArr := v.([]any)
	if err != nil || !isArr {
		return "", false
	}
	for _, r := range ranges {
		e, _ := r.([]any)
		if len(e) < 3 {
			continue
		}
		lo, _ := e[0].(int64)
		hi, _ := e[1].(int64)
		node, _ := e[2].([]any)
		if int64(slot) < lo || int64(slot) > hi || len(node) < 2 {
			continue
		}
		host, _ := node[0].(string)
		port, _ := node[1].(int64)
		return net.JoinHostPort(host, strconv.FormatInt(port, 10)), true
	}
	return "", false
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	flags    string
	masterID string // "-" for a master
}

// clusterView returns the nodes the node at addr knows, by node ID.
func clusterView(addr string) (map[string]clusterNode, bool) {
	text, err := DoBulk(addr, "CLUSTER", "NODES")
	if err != nil {
		return nil, false
	}
	view := map[string]clusterNode{}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) >= 4 {
			view[f[0]] = clusterNode{flags: f[2], masterID: f[3]}
		}
	}
	return view, true
}

// PauseNode stops the node at addr (SIGSTOP): it holds its connections
// open and answers nothing until ResumeNode.
func (c *Cluster) PauseNode(tb testing.TB, addr string) {
	tb.Helper()
	c.node(tb, addr).Pause()
}

// ResumeNode lets a paused node run again (SIGCONT).
func (c *Cluster) ResumeNode(tb testing.TB, addr string) {
	tb.Helper()
	c.node(tb, addr).Resume()
}

// SetNodeTimeout sets cluster-node-timeout on every live node: the time a
// node may not answer before the others mark it failed and a replica takes
// over (1 s as started).
func (c *Cluster) SetNodeTimeout(tb testing.TB, d time.Duration) {
	tb.Helper()
	for _, s := range c.Nodes {
		if s.live() {
			mustOK(tb, s.Addr(), "CONFIG", "SET", "cluster-node-timeout", strconv.FormatInt(d.Milliseconds(), 10))
		}
	}
}

// Set writes key (SET PX), as another tool would, through a cluster client
// of go-redis direct to the masters: it follows ASK and MOVED while a slot
// moves.
func (c *Cluster) Set(ctx context.Context, key, value string, ttl time.Duration) error {
	return c.client().Set(ctx, key, value, ttl).Err()
}

// Del deletes key as Set writes it.
func (c *Cluster) Del(ctx context.Context, key string) error {
	return c.client().Del(ctx, key).Err()
}

func (c *Cluster) client() *redis.ClusterClient {
	c.rawOnce.Do(func() {
		c.raw = redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Masters(), MaxRetries: -1})
	})
	return c.raw
}
