package redistest

import (
	"strconv"
	"testing"
	"time"
)

// waitReplicated holds while a replica has not processed a write, and
// passes once it has.
func TestWaitReplicated(t *testing.T) {
	m := startWith(t, "--repl-diskless-sync-delay", "0")
	if caughtUp(m.Addr(), 0) {
		t.Fatal("caught up without any replica")
	}
	r := startWith(t, "--replicaof", "127.0.0.1", strconv.Itoa(m.port), "--repl-diskless-sync-delay", "0")
	waitReplicated(t, m.Addr())
	r.Pause()
	mustOK(t, m.Addr(), "SET", "k", "v")
	info, _ := DoBulk(m.Addr(), "INFO", "replication")
	target, ok := infoInt(info, "master_repl_offset")
	if !ok || target == 0 {
		t.Fatalf("master_repl_offset missing from %q", info)
	}
	if caughtUp(m.Addr(), target) {
		t.Fatal("caught up while the replica is stopped")
	}
	r.Resume()
	start := time.Now()
	waitReplicated(t, m.Addr())
	if got, err := DoBulk(r.Addr(), "GET", "k"); err != nil || got != "v" {
		t.Fatalf("replica GET after waitReplicated: %q, %v", got, err)
	}
	t.Logf("replica caught up %v after Resume", time.Since(start).Round(time.Millisecond))
}
