package main

import (
	"context"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// Name keys of the tests (never real keys).
const (
	nameKeyHex      = "1717171717171717171717171717171717171717171717171717171717171717"
	otherNameKeyHex = "1818181818181818181818181818181818181818181818181818181818181818"
)

// With $CACHEKIT_NAME_KEY, get/set/del/exists/ttl/inspect take the
// application's key and work on its opaque name: the tool and a library
// Client with the same name key read each other's entries, and Redis holds
// no byte of the key.
func TestNameKeyRoundTrip(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_NAME_KEY="+nameKeyHex)
	const key = "user:alice@example.com"
	flags := []string{"--secure", "--prefix", "app:"}
	tool(t, env, append([]string{"set", key, `{"name":"Alice"}`, "--ttl", "5m"}, flags...)...).want(t, exitOK)
	if got := tool(t, env, append([]string{"get", key}, flags...)...).want(t, exitOK).line(); got != `{"name":"Alice"}` {
		t.Fatalf("get: %s", got)
	}
	tool(t, env, "exists", key, "--prefix", "app:", "--secure").want(t, exitOK)
	tool(t, env, "ttl", key, "--prefix", "app:").want(t, exitOK)
	tool(t, env, append([]string{"inspect", key}, flags...)...).want(t, exitOK)

	names, err := s.rdb.Keys(context.Background(), "*").Result()
	if err != nil || len(names) != 1 {
		t.Fatalf("redis holds %q, %v", names, err)
	}
	if !strings.HasPrefix(names[0], "app:") || strings.Contains(names[0], "alice") || strings.Contains(names[0], "user") {
		t.Fatalf("redis key %q is not opaque", names[0])
	}

	// A scanned opaque name opens without the name key: the AAD binds the stored name.
	noName := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	if got := tool(t, noName, "scan", "*", "--prefix", "app:", "--secure").want(t, exitOK).stdout; !strings.Contains(got, strings.TrimPrefix(names[0], "app:")) {
		t.Errorf("scan does not print the opaque name: %q", got)
	}
	tool(t, noName, "inspect", strings.TrimPrefix(names[0], "app:"), "--secure", "--prefix", "app:").want(t, exitOK)

	// The library reads what the tool wrote, and writes what the tool reads.
	nk, _ := hex.DecodeString(nameKeyHex)
	mk, _ := hex.DecodeString(testKeyHex)
	c, err := cachekit.New(cachekit.Options{RedisURL: s.srv.URL(), KeyPrefix: "app:",
		Encryption: &encryption.Config{MasterKey: mk, NameKey: nk}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, err := cachekit.Get[map[string]string](context.Background(), c, key)
	if err != nil || v["name"] != "Alice" {
		t.Fatalf("the library reads %v, %v", v, err)
	}
	if err := c.Set(context.Background(), "session:tok_abc", "s"); err != nil {
		t.Fatal(err)
	}
	if got := tool(t, env, append([]string{"get", "session:tok_abc"}, flags...)...).want(t, exitOK).line(); got != `"s"` {
		t.Fatalf("get of the library's entry: %s", got)
	}

	// The marker shows in scan as one 32-byte entry no keyring opens.
	for _, line := range strings.Split(tool(t, noName, "scan", "*", "--prefix", "app:", "--secure").want(t, exitOK).stdout, "\n") {
		if f := strings.Split(line, "\t"); f[0] == cachekit.NameMarker(encryption.DefaultTenant) && (len(f) < 4 || f[2] != "none" || f[3] != "32") {
			t.Errorf("scan shows the marker as %q", line)
		}
	}

	// rotate re-seals by opaque name (the AAD binds it), moves no name, and
	// counts the marker as unreadable, leaving it alone.
	old := s.with("CACHEKIT_MASTER_KEY="+oldKeyHex, "CACHEKIT_NAME_KEY="+nameKeyHex)
	tool(t, old, append([]string{"set", "user:old@example.com", `"o"`}, flags...)...).want(t, exitOK)
	rot := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	if out := tool(t, rot, "rotate", "--secure", "--prefix", "app:").want(t, exitOK).stdout; !strings.Contains(out, "re-sealed 1,") || !strings.Contains(out, "unreadable 1,") {
		t.Errorf("rotate: %s", out)
	}
	if got := tool(t, env, append([]string{"get", "user:old@example.com"}, flags...)...).want(t, exitOK).line(); got != `"o"` {
		t.Errorf("after rotate: %s", got)
	}

	// The library wrote the marker: another name key is refused, not "not found".
	bad := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_NAME_KEY="+otherNameKeyHex)
	r := tool(t, bad, append([]string{"get", key}, flags...)...).want(t, exitUsage)
	if !strings.Contains(r.stderr, "CACHEKIT_NAME_KEY") {
		t.Errorf("another name key: %q", r.stderr)
	}
	mustNotLeak(t, r, otherNameKeyHex, nameKeyHex)

	tool(t, env, "del", key, "--prefix", "app:").want(t, exitOK)
	tool(t, env, "exists", key, "--prefix", "app:").want(t, exitNotFound)
}

// A name key needs --secure to read or write values, and does not apply
// to interop keys.
func TestNameKeyUsage(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_NAME_KEY=" + nameKeyHex)
	tool(t, env, "get", "k").want(t, exitUsage)
	tool(t, env, "set", "k", "1").want(t, exitUsage)
	tool(t, env, "get", "k", "--interop", "--secure").want(t, exitUsage)
	r := tool(t, s.with("CACHEKIT_NAME_KEY=zz"), "exists", "k").want(t, exitUsage)
	mustNotLeak(t, r, "zz")
}
