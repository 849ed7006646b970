package redistest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// SentinelMaster is the master name the harness's Sentinel monitors.
const SentinelMaster = "mymaster"

// Sentinel is a private Sentinel deployment: a master, one replica, and one
// sentinel (quorum 1) that monitors them.
type Sentinel struct {
	Master, Replica *Server
	sentinelAddr    string
}

// StartSentinel starts the deployment and waits until the sentinel knows
// the replica, so that a failover can promote it.
func StartSentinel(tb testing.TB) *Sentinel {
	tb.Helper()
	m := Start(tb)
	r := startWith(tb, "--replicaof", "127.0.0.1", strconv.Itoa(m.port))
	port := freePort(tb)
	dir := tb.TempDir()
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nsentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
		port, dir, SentinelMaster, m.port, SentinelMaster, SentinelMaster)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel", "--logfile", filepath.Join(dir, "sentinel.log"))
	if err := cmd.Start(); err != nil {
		tb.Fatalf("redistest: start sentinel: %v", err)
	}
	go func() { _ = cmd.Wait() }()
	tb.Cleanup(func() { _ = cmd.Process.Kill() })
	s := &Sentinel{Master: m, Replica: r, sentinelAddr: "127.0.0.1:" + strconv.Itoa(port)}
	deadline := time.Now().Add(20 * time.Second)
	for {
		line, err := Do(s.sentinelAddr, "SENTINEL", "REPLICAS", SentinelMaster)
		if err == nil && strings.HasPrefix(line, "*") && line != "*0" {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: sentinel did not find the replica: %q, %v", line, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return s
}

// SentinelAddrs returns the sentinel's address.
func (s *Sentinel) SentinelAddrs() []string { return []string{s.sentinelAddr} }

// Failover asks the sentinel to promote the replica, retrying while the
// sentinel has not yet judged the replica fit (-NOGOODSLAVE).
func (s *Sentinel) Failover(tb testing.TB) {
	tb.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := Do(s.sentinelAddr, "SENTINEL", "FAILOVER", SentinelMaster)
		if err == nil && r == "+OK" {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("redistest: SENTINEL FAILOVER: %q, %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
