package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestOperatorMessages: the situations an operator meets get the exit code
// of what they are and a line that says what to do.
func TestOperatorMessages(t *testing.T) {
	s := newStack(t)
	sec := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	tool(t, sec, "set", "enc:1", `{"n":1}`, "--secure").want(t, exitOK)
	tool(t, s.env, "set", "plain:1", `{"n":1}`).want(t, exitOK)
	if err := s.rdb.RPush(context.Background(), "list:1", "x").Err(); err != nil {
		t.Fatal(err)
	}

	contains := func(r result, want string) {
		t.Helper()
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("stderr %q does not say %q", r.stderr, want)
		}
	}
	// A key holding another Redis type is not a CacheKit entry (3), not an
	// unavailable Redis (4).
	contains(tool(t, s.env, "get", "list:1").want(t, exitIntegrity), "not a CacheKit entry")
	// A plaintext entry read with --secure, and an encrypted one without.
	contains(tool(t, sec, "get", "plain:1", "--secure").want(t, exitIntegrity), "without --secure")
	contains(tool(t, s.env, "get", "enc:1").want(t, exitIntegrity), "pass --secure")
	// Configuration mistakes are usage errors (2), reported at once.
	start := time.Now()
	tool(t, nil, "get", "a", "--redis", "redis://127.0.0.1:99999/0").want(t, exitUsage)
	contains(tool(t, nil, "get", "a", "--redis", "redis://"+s.srv.Addr()+"/99").want(t, exitUsage), "database index")
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("configuration errors took %v", d)
	}
	// A TTL without a unit says what a duration looks like.
	contains(tool(t, s.env, "set", "a", "1", "--ttl", "10").want(t, exitUsage), "Go duration such as 10m")
	// The key variable exported without --secure: the write is plaintext,
	// and the tool says so.
	r := tool(t, sec, "set", "plain:2", `{"n":2}`)
	if r.code != exitOK || !strings.Contains(r.stderr, "written unencrypted") {
		t.Fatalf("set with the key exported but no --secure: exit %d, stderr %q", r.code, r.stderr)
	}
}
