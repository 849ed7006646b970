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
