package redistest

import "testing"

func TestStartStopRestartKeepsData(t *testing.T) {
	s := Start(t)
	if r, err := Do(s.Addr(), "SET", "k", "v"); err != nil || r != "+OK" {
		t.Fatalf("SET: %q %v", r, err)
	}
	s.Stop()
	if _, err := Do(s.Addr(), "PING"); err == nil {
		t.Fatal("server still answers after Stop")
	}
	s.Restart()
	if r, err := Do(s.Addr(), "GET", "k"); err != nil || r != "$1" {
		t.Fatalf("GET after restart: %q %v (want the saved value back)", r, err)
	}
	s.Kill()
	if _, err := Do(s.Addr(), "PING"); err == nil {
		t.Fatal("server still answers after Kill")
	}
}

// TestPortsNeverHandedOutTwice: no two servers of one test process are
// given the same port, nor a cluster node's bus port, even after one has
// stopped (its port waits for its restart).
func TestPortsNeverHandedOutTwice(t *testing.T) {
	seen := map[int]bool{}
	for range 200 {
		p := freePort(t)
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
	}
	p := freeClusterPort(t)
	if reserve(p+clusterBusOffset) || reserve(p) {
		t.Fatal("a cluster node's port or bus port could be handed out again")
	}
}
