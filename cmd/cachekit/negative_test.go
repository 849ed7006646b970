package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// negativeClient is an application's Client under prefix that caches
// "not found" (NegativeTTL), sealing under keyHex ("" : no encryption).
func (s *stack) negativeClient(t *testing.T, prefix, keyHex string) *cachekit.Client {
	t.Helper()
	o := cachekit.Options{Redis: s.rdb, KeyPrefix: prefix, NegativeTTL: time.Hour, Logger: slog.New(slog.DiscardHandler)}
	if keyHex != "" {
		o.Encryption = &encryption.Config{MasterKey: mustHex(t, keyHex)}
	}
	c, err := cachekit.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// cacheNotFound makes c cache key as not found.
func cacheNotFound(t *testing.T, c *cachekit.Client, key string) {
	t.Helper()
	_, err := cachekit.GetOrLoad(context.Background(), c, key, func(context.Context) (string, error) { return "", cachekit.ErrNotFound })
	if !errors.Is(err, cachekit.ErrNotFound) {
		t.Fatal(err)
	}
}

// The tool shows a negative entry as one: get exits 1 saying so, inspect
// reports its authentication and not-after, scan and stats count it as
// negative, rotate re-seals it under the current key; a forged one fails
// inspect.
func TestNegativeEntryInTheTool(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	cacheNotFound(t, s.negativeClient(t, "app:", oldKeyHex), "gone")
	cacheNotFound(t, s.negativeClient(t, "app:", ""), "plain")
	cur := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS="+oldKeyHex)

	r := tool(t, cur, "get", "gone", "--secure", "--prefix", "app:").want(t, exitNotFound)
	if !strings.Contains(r.stderr, "negative entry") {
		t.Fatalf("get: %q", r.stderr)
	}
	r = tool(t, cur, "inspect", "gone", "--secure", "--prefix", "app:").want(t, exitOK)
	for _, want := range []string{"negative entry", "authenticated", "previous #1", "not after"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("inspect lacks %q:\n%s", want, r.stdout)
		}
	}
	tool(t, s.env, "inspect", "plain", "--prefix", "app:").want(t, exitOK)
	r = tool(t, cur, "scan", "*", "--secure", "--prefix", "app:", "--json").want(t, exitOK)
	if !strings.Contains(r.stdout, `"key":"gone","mode":"negative","keyring":"previous#1"`) ||
		!strings.Contains(r.stdout, `"key":"plain","mode":"negative","keyring":"none"`) {
		t.Fatalf("scan:\n%s", r.stdout)
	}
	r = tool(t, cur, "stats", "--secure", "--prefix", "app:").want(t, exitOK)
	if !strings.Contains(r.stdout, "negative 2") {
		t.Fatalf("stats:\n%s", r.stdout)
	}

	var sum rotateSummary
	code, out, errOut := runIn(cur, "rotate", "--secure", "--prefix", "app:", "--json")
	if err := json.Unmarshal([]byte(out), &sum); code != exitOK || err != nil || sum.Resealed != 1 {
		t.Fatalf("rotate: exit %d, %q %q (%v)", code, out, errOut, err)
	}
	onlyCurrent := s.negativeClient(t, "app:", testKeyHex)
	_, err := cachekit.GetOrLoad(ctx, onlyCurrent, "gone", func(context.Context) (string, error) { return "loaded", nil })
	var ne *cachekit.NegativeHitError
	if !errors.As(err, &ne) {
		t.Fatalf("after rotate, under the current key alone: %v, want a negative hit", err)
	}

	forged := append([]byte(nil), s.raw(t, "app:gone")...)
	forged[len(forged)-1] ^= 1
	s.put(t, "app:forged", forged)
	r = tool(t, cur, "inspect", "forged", "--secure", "--prefix", "app:").want(t, exitIntegrity)
	if !strings.Contains(r.stderr, "does not authenticate") {
		t.Fatalf("inspect of a forged negative entry: %q", r.stderr)
	}
}
