package main

import (
	"strings"
	"testing"
	"time"
)

// set, del and flush announce each key they write on --channel, as the
// library's Clients do, for applications whose Redis refuses tracking.
func TestWritesAnnounced(t *testing.T) {
	s := newStack(t)
	ps := s.rdb.Subscribe(t.Context(), "inv")
	defer ps.Close()
	if _, err := ps.Receive(t.Context()); err != nil {
		t.Fatal(err)
	}
	env := s.with()
	tool(t, env, "set", "k", `1`, "--prefix", "app:", "--channel", "inv").want(t, exitOK)
	tool(t, env, "del", "k", "--prefix", "app:", "--channel", "inv").want(t, exitOK)
	tool(t, env, "set", "f", `1`, "--prefix", "app:", "--channel", "inv").want(t, exitOK)
	tool(t, env, "flush", "--match", "*", "--yes", "--prefix", "app:", "--channel", "inv").want(t, exitOK)
	var got []string
	for range 4 {
		select {
		case m := <-ps.Channel():
			f := strings.Fields(m.Payload)
			if len(f) != 3 || f[0] != "ck1" {
				t.Fatalf("message %q", m.Payload)
			}
			got = append(got, f[2])
		case <-time.After(5 * time.Second):
			t.Fatalf("announced %v", got)
		}
	}
	if strings.Join(got, " ") != "app:k app:k app:f app:f" {
		t.Fatalf("announced %v", got)
	}
}
