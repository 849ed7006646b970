package redistest

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// Cluster is a private Redis Cluster of masters only, each owning an equal
// share of the hash slots.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts n cluster-enabled servers, splits the slots between
// them, joins them and waits until every node reports the cluster ok.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	c := &Cluster{}
	for range n {
		dir := tb.TempDir()
		c.Nodes = append(c.Nodes, startWith(tb, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, "nodes.conf"),
			"--cluster-node-timeout", "1000"))
	}
	for i, s := range c.Nodes {
		lo, hi := i*clusterSlots/n, (i+1)*clusterSlots/n-1
		if r, err := Do(s.Addr(), "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil || r != "+OK" {
			tb.Fatalf("redistest: ADDSLOTSRANGE: %q, %v", r, err)
		}
		if i > 0 {
			if r, err := Do(s.Addr(), "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(c.Nodes[0].port)); err != nil || r != "+OK" {
				tb.Fatalf("redistest: CLUSTER MEET: %q, %v", r, err)
			}
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for _, s := range c.Nodes {
		for !clusterOK(s.Addr(), n) {
			if time.Now().After(deadline) {
				tb.Fatalf("redistest: cluster not ok within 20s")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}

// Addrs returns every node's address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		out[i] = s.Addr()
	}
	return out
}

// clusterOK reports whether the node at addr sees a healthy cluster of n
// nodes. CLUSTER INFO is a bulk reply, so it is read with a raw dial.
func clusterOK(addr string, n int) bool {
	info, err := DoBulk(addr, "CLUSTER", "INFO")
	return err == nil && strings.Contains(info, "cluster_state:ok") &&
		strings.Contains(info, fmt.Sprintf("cluster_known_nodes:%d", n))
}
