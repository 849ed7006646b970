package cachekit

import (
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// invalidationBound is the delay within which a write on one Client must be
// visible to another Client's next Get, L1 included.
const invalidationBound = 2 * time.Second

func TestInvalidationAcrossClients(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	opts := Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}}
	a := newClient(t, opts)
	b := newClient(t, opts)
	ctl := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig("")}) // no invalidation

	mustSet(t, a, "k", "v1")
	for _, c := range []*Client{b, ctl} {
		if v, err := Get[string](bg, c, "k"); err != nil || v != "v1" {
			t.Fatalf("first read: %q, %v", v, err)
		}
		if st := c.Stats(); st.L2Hits != 1 {
			t.Fatalf("expected an L2 read that filled L1: %+v", st)
		}
	}
	mustSet(t, a, "k", "v2")
	waitValue(t, b, "k", "v2")
	// The control client shows that L1 did hold the old value: without
	// invalidation it keeps serving it.
	if v, err := Get[string](bg, ctl, "k"); err != nil || v != "v1" {
		t.Fatalf("control client: %q, %v (want the stale v1 from its L1)", v, err)
	}
	if st := b.InvalidationStats(); st.Applied == 0 {
		t.Fatalf("b applied no invalidation: %+v", st)
	}
	// A's own writes come back as invalidations too; A still reads its
	// own write.
	if v, err := Get[string](bg, a, "k"); err != nil || v != "v2" {
		t.Fatalf("a after its own write: %q, %v", v, err)
	}

	if err := a.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	var err error
	if !testwait.Until(invalidationBound, func() bool { _, err = Get[string](bg, b, "k"); return err == ErrNotFound }) {
		t.Fatalf("delete on a not seen by b within %v: %v", invalidationBound, err)
	}
}

func TestInvalidationPrefixesAndMSet(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	a := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, KeyPrefix: "app:", Invalidation: &Invalidation{Channel: "ch"}})
	b := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, KeyPrefix: "app:", Invalidation: &Invalidation{Channel: "ch"}})
	other := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, KeyPrefix: "other:", Invalidation: &Invalidation{Channel: "ch"}})
	if err := a.MSetWithTTL(bg, map[string]any{"x": 1, "y": 2}, time.Minute); err != nil {
		t.Fatal(err)
	}
	mustSet(t, other, "x", 100)
	for _, k := range []string{"x", "y"} {
		if _, err := Get[int](bg, b, k); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.MSetWithTTL(bg, map[string]any{"x": 10, "y": 20}, time.Minute); err != nil {
		t.Fatal(err)
	}
	waitValue(t, b, "x", 10)
	waitValue(t, b, "y", 20)
	// other's writes name "other:x": never applied by the app: clients.
	if v, err := Get[int](bg, other, "x"); err != nil || v != 100 {
		t.Fatalf("other: %d, %v", v, err)
	}
}

// waitValue polls c until key reads as want, failing after invalidationBound.
func waitValue[T comparable](t *testing.T, c *Client, key string, want T) {
	t.Helper()
	var v T
	var err error
	if !testwait.Until(invalidationBound, func() bool { v, err = Get[T](bg, c, key); return err == nil && v == want }) {
		t.Fatalf("write not visible within %v: got %v, %v", invalidationBound, v, err)
	}
}
