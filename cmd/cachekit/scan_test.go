package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// runIn runs one command line in-process with env (KEY=VALUE pairs).
func runIn(envv []string, args ...string) (int, string, string) { return runWith(envv, "", args...) }

// TestScan: scan lists exactly the entries matching the pattern, under
// the prefix, with their mode, keyring entry, size and TTL; --summary
// counts them; values are never printed.
func TestScan(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	old, cur, plain := s.appClient(t, "app:", oldKeyHex), s.appClient(t, "app:", testKeyHex), s.appClient(t, "app:")
	for _, err := range []error{
		old.SetWithTTL(ctx, "user:1", "secret-one", time.Hour),
		cur.SetWithTTL(ctx, "user:2", "secret-two", time.Hour),
		plain.SetWithTTL(ctx, "user:3", "public", time.Hour),
		cur.SetWithTTL(ctx, "other:9", "not matched", time.Hour),
		s.rdb.RPush(ctx, "app:user:list", "x").Err(),
		s.rdb.Set(ctx, "app:user:junk", "not an entry at all", 0).Err(),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	code, out, errOut := runIn(envv, "scan", "user:*", "--prefix", "app:", "--secure", "--json")
	if code != exitOK || errOut != "" {
		t.Fatalf("scan --json: exit %d, stderr %q", code, errOut)
	}
	if strings.Contains(out, "secret") || strings.Contains(out, "public") {
		t.Fatalf("scan printed a value: %s", out)
	}
	got := map[string]scanEntry{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var en scanEntry
		if err := json.Unmarshal([]byte(line), &en); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got[en.Key] = en
	}
	want := map[string][2]string{
		"user:1":    {"encrypted", "previous#1"},
		"user:2":    {"encrypted", "current"},
		"user:3":    {"plain", "none"},
		"user:list": {"unknown", "none"},
		"user:junk": {"unknown", "none"},
	}
	if len(got) != len(want) {
		keys := make([]string, 0, len(got))
		for k := range got {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		t.Fatalf("scan listed %v, want exactly %d entries", keys, len(want))
	}
	for k, w := range want {
		en := got[k]
		if en.Mode != w[0] || en.Keyring != w[1] {
			t.Errorf("%s: mode %s keyring %s, want %s %s", k, en.Mode, en.Keyring, w[0], w[1])
		}
	}
	if en := got["user:2"]; en.Bytes == 0 || en.TTLMs <= 0 || en.TTLMs > 3600_000 {
		t.Errorf("user:2: %d bytes, ttl %d ms", en.Bytes, en.TTLMs)
	}
	if got["user:junk"].TTLMs != -1 {
		t.Errorf("a key without expiry: ttl_ms %d, want -1", got["user:junk"].TTLMs)
	}

	code, out, _ = runIn(envv, "scan", "user:*", "--prefix", "app:", "--secure", "--summary")
	if code != exitOK || out != "entries 5: encrypted 2, plain 1, unknown 2\nkeyring: current 1, previous 1, none 3\n" {
		t.Fatalf("scan --summary: exit %d, %q", code, out)
	}
	// Without --secure: encrypted by elimination, keyring none.
	code, out, _ = runIn(s.env, "scan", "user:[12]", "--prefix", "app:")
	if code != exitOK || strings.Count(out, "\tencrypted\tnone\t") != 2 {
		t.Fatalf("scan without --secure: exit %d, %q", code, out)
	}
	if code, _, _ := runIn(envv, "scan", "x", "--json", "--summary"); code != exitUsage {
		t.Fatalf("--json with --summary: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runIn(envv, "scan"); code != exitUsage {
		t.Fatalf("scan without a pattern: exit %d, want %d", code, exitUsage)
	}
	if code, _, _ := runIn([]string{"CACHEKIT_REDIS_URL=redis://127.0.0.1:1/0"}, "scan", "*"); code != exitUnavailable {
		t.Fatalf("scan with Redis down: exit %d, want %d", code, exitUnavailable)
	}
}

// TestFlush: flush refuses without --yes or --match (deleting nothing), and
// with both deletes exactly the matching keys under the prefix.
func TestFlush(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	for _, k := range []string{"app:user:1", "app:user:2", "app:order:1", "user:1"} {
		if err := s.rdb.Set(ctx, k, "x", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, errOut := runIn(s.env, "flush", "--match", "user:*", "--prefix", "app:"); code != exitUsage || !strings.Contains(errOut, "--yes") {
		t.Fatalf("flush without --yes: exit %d, %q", code, errOut)
	}
	if code, _, _ := runIn(s.env, "flush", "--yes"); code != exitUsage {
		t.Fatalf("flush without --match: exit %d", code)
	}
	if n, _ := s.rdb.DBSize(ctx).Result(); n != 4 {
		t.Fatalf("a refused flush deleted keys: %d left", n)
	}
	code, out, errOut := runIn(s.env, "flush", "--match", "user:*", "--prefix", "app:", "--yes")
	if code != exitOK || errOut != "" || out != "deleted 2 keys\n" {
		t.Fatalf("flush: exit %d, %q, %q", code, out, errOut)
	}
	for k, want := range map[string]int64{"app:user:1": 0, "app:user:2": 0, "app:order:1": 1, "user:1": 1} {
		if n, _ := s.rdb.Exists(ctx, k).Result(); n != want {
			t.Errorf("%s exists = %d after flush, want %d", k, n, want)
		}
	}
}

// TestCommandsReachL1: an application Client with Invalidation on drops
// the keys the tool writes from its L1 (Redis's tracking reports them), so
// after set it reads the tool's value, after del and flush a miss, and
// after rotate the re-sealed entry (counted as an L1 miss that reaches
// Redis).
func TestCommandsReachL1(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	app, err := cachekit.New(cachekit.Options{
		RedisURL: s.srv.URL(), L1MaxBytes: 1 << 20, KeyPrefix: "app:",
		Encryption:   &encryption.Config{MasterKey: mustHex(t, testKeyHex), PreviousKeys: [][]byte{mustHex(t, oldKeyHex)}},
		Invalidation: &cachekit.Invalidation{}, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	old := s.appClient(t, "app:", oldKeyHex)
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	deadline := time.Now().Add(10 * time.Second)
	// cached reads key until the application serves it from L1 (tracking is up).
	cached := func(key string) {
		t.Helper()
		hits := app.Stats().L1Hits
		for app.Stats().L1Hits == hits {
			if _, err := cachekit.Get[string](ctx, app, key); err != nil || time.Now().After(deadline) {
				t.Fatalf("the application never served %s from L1: %v", key, err)
			}
		}
	}
	// until polls the application's read of key until ok accepts it.
	until := func(what, key string, ok func(string, error) bool) {
		t.Helper()
		testwait.For(t, time.Until(deadline), func() bool {
			v, err := cachekit.Get[string](ctx, app, key)
			return ok(v, err)
		}, what+" reaching the application's L1 ("+key+")")
	}
	run := func(args ...string) {
		t.Helper()
		if code, out, errOut := runIn(envv, args...); code != exitOK {
			t.Fatalf("%v: exit %d, %q %q", args, code, out, errOut)
		}
	}
	for _, k := range []string{"session:1", "session:2", "token"} {
		if err := app.Set(ctx, k, "app-value"); err != nil {
			t.Fatal(err)
		}
		cached(k)
	}
	run("set", "token", `"tool-value"`, "--prefix", "app:", "--secure")
	until("set", "token", func(v string, err error) bool { return err == nil && v == "tool-value" })
	run("del", "token", "--prefix", "app:", "--secure")
	until("del", "token", func(_ string, err error) bool { return errors.Is(err, cachekit.ErrNotFound) })
	run("flush", "--match", "session:*", "--prefix", "app:", "--yes")
	until("flush", "session:1", func(_ string, err error) bool { return errors.Is(err, cachekit.ErrNotFound) })
	until("flush", "session:2", func(_ string, err error) bool { return errors.Is(err, cachekit.ErrNotFound) })

	if err := old.Set(ctx, "rotated", "v"); err != nil {
		t.Fatal(err)
	}
	cached("rotated")
	before := app.Stats().DecryptsByKey
	run("rotate", "--secure", "--prefix", "app:")
	until("rotate", "rotated", func(v string, err error) bool {
		return err == nil && v == "v" && app.Stats().DecryptsByKey[0] > before[0]
	})
}

// TestStats: stats counts a sample by mode, keyring entry, expiry and size,
// and stops at --sample.
func TestStats(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	cur, old := s.appClient(t, "", testKeyHex), s.appClient(t, "", oldKeyHex)
	for i := range 5 {
		if err := cur.Set(ctx, fmt.Sprintf("c:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := old.Set(ctx, fmt.Sprintf("o:%d", i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.rdb.Set(ctx, "forever", "junk", 0).Err(); err != nil {
		t.Fatal(err)
	}
	envv := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)
	code, out, errOut := runIn(envv, "stats", "--secure")
	if code != exitOK || errOut != "" {
		t.Fatalf("stats: exit %d, %q", code, errOut)
	}
	for _, want := range []string{
		"entries sampled   9 ",
		"by mode           encrypted 8, plain 0, unknown 1",
		"by keyring entry  current 5, previous#1 3, none 1",
		"no expiry         1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
	if code, out, _ := runIn(envv, "stats", "--sample", "4"); code != exitOK || !strings.Contains(out, "entries sampled   4 ") {
		t.Fatalf("stats --sample 4: exit %d\n%s", code, out)
	}
	if code, _, _ := runIn(envv, "stats", "--sample", "0"); code != exitUsage {
		t.Fatalf("stats --sample 0: exit %d, want %d", code, exitUsage)
	}
}

// appClient is an application's Client on the stack's Redis with key
// prefix prefix: keys[0] (hex) is its master key, the others its previous
// keys; with no keys it does not encrypt.
func (s *stack) appClient(t *testing.T, prefix string, keys ...string) *cachekit.Client {
	t.Helper()
	var cfg *encryption.Config
	if len(keys) > 0 {
		cfg = &encryption.Config{MasterKey: mustHex(t, keys[0])}
		for _, k := range keys[1:] {
			cfg.PreviousKeys = append(cfg.PreviousKeys, mustHex(t, k))
		}
	}
	c, err := cachekit.New(cachekit.Options{Redis: s.rdb, KeyPrefix: prefix, Encryption: cfg, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func mustHex(t *testing.T, h string) []byte {
	t.Helper()
	b, err := encryption.ParseMasterKeyHex(h)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
