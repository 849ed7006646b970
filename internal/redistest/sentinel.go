package redistest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the master name the harness's Sentinel monitors.
const SentinelMaster = "mymaster"

// Sentinel timings, in milliseconds: a master that does not answer for
// sentinelDownAfter is subjectively down; a failover that stalls is
// abandoned after sentinelFailoverTimeout and the next may start after
// twice that.
const (
	sentinelDownAfter       = "1000"
	sentinelFailoverTimeout = "3000"
)

// Sentinel is a private Sentinel deployment: a master, one replica, and
// sentinels that monitor them under the name SentinelMaster.
type Sentinel struct {
	// Master and Replica are the servers as started; after a failover
	// Redis has swapped their roles, these fields have not. MasterAddr
	// tells the current master.
	Master, Replica *Server
	// Sentinels are the sentinel processes; Pause, Kill and Restart work
	// on them as on any Server.
	Sentinels []*Server
}

// StartSentinel starts a deployment with one sentinel (quorum 1) and waits
// until the sentinel knows the replica, so that a failover can promote it.
// It is StartSentinelN(tb, 1).
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	return StartSentinelN(tb, 1)
}

// StartSentinelN starts a master, one replica and n sentinels with quorum
// n/2+1, a master declared down after 1 s without an answer and a failover
// timeout of 3 s. It returns once the replica is in sync and every
// sentinel knows the replica and the n-1 other sentinels, so that a
// failover needs only a dead master and the sentinels' agreement.
func StartSentinelN(tb testing.TB, n int) *Sentinel {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("redistest: a Sentinel deployment of %d sentinels", n)
	}
	m := startWith(tb, "--repl-diskless-sync-delay", "0")
	r := startWith(tb, "--replicaof", "127.0.0.1", strconv.Itoa(m.port), "--repl-diskless-sync-delay", "0")
	waitFor(tb, 10*time.Second, "replica in sync", func() bool {
		info, err := DoBulk(r.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	s := &Sentinel{Master: m, Replica: r}
	for range n {
		s.Sentinels = append(s.Sentinels, startSentinelProcess(tb, m.port, n/2+1))
	}
	others := fmt.Sprintf("*%d", n-1)
	waitFor(tb, 20*time.Second, "sentinels to know the replica and each other", func() bool {
		for _, sen := range s.Sentinels {
			reps, err := Do(sen.Addr(), "SENTINEL", "REPLICAS", SentinelMaster)
			if err != nil || !strings.HasPrefix(reps, "*") || reps == "*0" {
				return false
			}
			if peers, err := Do(sen.Addr(), "SENTINEL", "SENTINELS", SentinelMaster); err != nil || peers != others {
				return false
			}
		}
		return true
	})
	return s
}

// startSentinelProcess starts one sentinel monitoring the master on
// masterPort with quorum.
func startSentinelProcess(tb testing.TB, masterPort, quorum int) *Server {
	tb.Helper()
	dir := tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("sentinel monitor %[1]s 127.0.0.1 %[2]d %[3]d\n"+
		"sentinel down-after-milliseconds %[1]s %[4]s\n"+
		"sentinel failover-timeout %[1]s %[5]s\n",
		SentinelMaster, masterPort, quorum, sentinelDownAfter, sentinelFailoverTimeout)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		tb.Fatalf("redistest: write sentinel.conf: %v", err)
	}
	return launch(tb, &Server{tb: tb, dir: dir, head: []string{conf, "--sentinel"}})
}

// SentinelAddrs returns the address of every sentinel.
func (s *Sentinel) SentinelAddrs() []string {
	out := make([]string, len(s.Sentinels))
	for i, sen := range s.Sentinels {
		out[i] = sen.Addr()
	}
	return out
}

// Failover asks the first sentinel to promote the replica (SENTINEL
// FAILOVER), retrying while the sentinel has not yet judged the replica
// fit (-NOGOODSLAVE).
func (s *Sentinel) Failover(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := Do(s.Sentinels[0].Addr(), "SENTINEL", "FAILOVER", SentinelMaster)
		if err == nil && r == "+OK" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: SENTINEL FAILOVER: %q, %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// MasterAddr returns the master's address as the first live sentinel that
// answers reports it (SENTINEL GET-MASTER-ADDR-BY-NAME).
func (s *Sentinel) MasterAddr(tb testing.TB) string {
	tb.Helper()
	for _, sen := range s.Sentinels {
		if !sen.live() {
			continue
		}
		if addr, ok := sentinelMaster(sen.Addr()); ok {
			return addr
		}
	}
	tb.Fatalf("redistest: no sentinel reported the master")
	return ""
}

// KillMaster kills the current master (as MasterAddr reports it) with
// SIGKILL and returns its address. The sentinels then have to find it down
// and agree on a failover by themselves.
func (s *Sentinel) KillMaster(tb testing.TB) string {
	tb.Helper()
	addr := s.MasterAddr(tb)
	for _, srv := range []*Server{s.Master, s.Replica} {
		if srv.Addr() == addr {
			srv.Kill()
			return addr
		}
	}
	tb.Fatalf("redistest: the sentinels' master %s is neither server of the deployment", addr)
	return ""
}

// WaitNewMaster waits until every live sentinel reports the same master,
// other than old, and that server answers ROLE as a master; it returns the
// new master's address, and fails tb when limit passes first.
func (s *Sentinel) WaitNewMaster(tb testing.TB, old string, limit time.Duration) string {
	tb.Helper()
	var got string
	waitFor(tb, limit, "a new master other than "+old, func() bool {
		got = ""
		for _, sen := range s.Sentinels {
			if !sen.live() {
				continue
			}
			addr, ok := sentinelMaster(sen.Addr())
			if !ok || addr == old || (got != "" && addr != got) {
				return false
			}
			got = addr
		}
		return got != "" && isMaster(got)
	})
	return got
}

// sentinelMaster asks the sentinel at addr for the master's address.
func sentinelMaster(addr string) (string, bool) {
	v, err := doValue(addr, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", SentinelMaster)
	hp, ok := stringsOf(v)
	if err != nil || !ok || len(hp) != 2 {
		return "", false
	}
	return net.JoinHostPort(hp[0], hp[1]), true
}
