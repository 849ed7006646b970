package cachekit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
)

// These tests drive real races through the public API: a go-redis hook
// holds one operation's reply after Redis has applied it, another operation
// runs to completion meanwhile, then the held one finishes. Afterwards the
// Client must agree with Redis. Invalidation is off unless the test is
// about it, so only the L1 version guard stands between the race and a
// stale L1.

// heldClient returns a Client (encrypted, L1 on, no invalidation) on a
// fresh Redis whose go-redis client holds the reply of the first name/key
// command, and a plain client on the same Redis for setup and checks.
func heldClient(t *testing.T, name, key string, opts Options) (*Client, *redistest.Hold, *redis.Client) {
	t.Helper()
	return heldClientWith(t, redistest.NewHold(name, key).Named(seam.CommandName), opts)
}

// heldClientWith is heldClient with a Hold of the caller's.
func heldClientWith(t *testing.T, h *redistest.Hold, opts Options) (*Client, *redistest.Hold, *redis.Client) {
	t.Helper()
	srv, raw := withRedis(t)
	if opts.Invalidation != nil && opts.Invalidation.FallbackL1Lifetime > 0 {
		refuseTracking(t, srv.Addr(), false) // fallbackModes' "fallback"
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.AddHook(h)
	t.Cleanup(h.Release)
	opts.Redis = rdb
	if opts.L1MaxBytes == 0 {
		opts.L1MaxBytes = 1 << 20
	}
	if opts.Encryption == nil {
		opts.Encryption = encConfig("")
	}
	c := newClient(t, opts)
	seam.Install(c.l2, h) // below the pipeliner: holds the caller, not the stream
	return c, h, raw
}

// async runs f in a goroutine and returns a channel with its error.
func async(f func() error) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- f() }()
	return ch
}

// whileHeld starts op, waits until h holds its reply (Redis has applied
// it), runs meanwhile to completion, then releases op; op must succeed.
func whileHeld(t *testing.T, h *redistest.Hold, op func() error, meanwhile func()) {
	t.Helper()
	done := async(op)
	<-h.Held()
	meanwhile()
	h.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// mustAgree fails unless c reads key as Redis holds it (want "" = absent).
func mustAgree(t *testing.T, c *Client, raw *redis.Client, key, want string) {
	t.Helper()
	n, err := raw.Exists(bg, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Get[string](bg, c, key)
	switch {
	case want == "" && n != 0:
		t.Fatalf("redis still holds %q", key)
	case want == "" && !errors.Is(err, ErrNotFound):
		t.Fatalf("Get(%q) = %q, %v; redis has nothing", key, got, err)
	case want != "" && (err != nil || got != want):
		t.Fatalf("Get(%q) = %q, %v; redis holds %q", key, got, err, want)
	}
	if ok, err := c.Exists(bg, key); err != nil || ok != (want != "") {
		t.Fatalf("Exists(%q) = %v, %v; want %v", key, ok, err, want != "")
	}
}

func TestCoherenceSetSet(t *testing.T) {
	t.Parallel()
	for name, opts := range fallbackModes() {
		t.Run(name, func(t *testing.T) {
			c, h, raw := heldClient(t, "set", "k", opts)
			whileHeld(t, h, func() error { return c.Set(bg, "k", "a") }, func() {
				// Redis holds "a"; the Set has not written L1 yet.
				mustSet(t, c, "k", "b")
			})
			mustAgree(t, c, raw, "k", "b")
		})
	}
}

// B's Set is held after it took its L1 ticket but before Redis saw it; A's
// Set then completes in both tiers. B's SET lands in Redis last, so B's L1
// write, which finds the version moved, must drop A's value from L1.
func TestCoherenceSetSetLaterInRedis(t *testing.T) {
	t.Parallel()
	c, h, raw := heldClientWith(t, redistest.NewHoldBefore("set", "k"), Options{})
	whileHeld(t, h, func() error { return c.Set(bg, "k", "b") }, func() {
		mustSet(t, c, "k", "a")
	})
	mustAgree(t, c, raw, "k", "b")
}

func TestCoherenceSetDelete(t *testing.T) {
	t.Parallel()
	for name, opts := range fallbackModes() {
		t.Run(name, func(t *testing.T) {
			c, h, raw := heldClient(t, "set", "token", opts)
			whileHeld(t, h, func() error { return c.Set(bg, "token", "revoked-session") }, func() {
				if err := c.Delete(bg, "token"); err != nil {
					t.Fatal(err)
				}
			})
			mustAgree(t, c, raw, "token", "")
		})
	}
}

func TestCoherenceMSetSet(t *testing.T) {
	t.Parallel()
	c, h, raw := heldClient(t, "set", "m1", Options{})
	whileHeld(t, h, func() error { return c.MSetWithTTL(bg, map[string]any{"m1": "old"}, time.Minute) }, func() {
		mustSet(t, c, "m1", "new")
	})
	mustAgree(t, c, raw, "m1", "new")
}

// A Get that read the old value from Redis before a Set must not backfill
// it over the Set.
func TestCoherenceBackfillSet(t *testing.T) {
	t.Parallel()
	for _, op := range []string{"set", "delete"} {
		t.Run(op, func(t *testing.T) {
			c, h, raw := heldClient(t, "getrange", "k", Options{})
			writer := newClient(t, Options{Redis: raw, Encryption: encConfig("")}) // no L1
			mustSet(t, writer, "k", "old")
			want := "new"
			whileHeld(t, h, func() error { _, err := Get[string](bg, c, "k"); return err }, func() {
				// The Get has read "old" from Redis.
				if op == "set" {
					mustSet(t, c, "k", "new")
				} else {
					want = ""
					if err := c.Delete(bg, "k"); err != nil {
						t.Fatal(err)
					}
				}
			})
			mustAgree(t, c, raw, "k", want)
		})
	}
}

func TestCoherenceMGetSet(t *testing.T) {
	t.Parallel()
	c, h, raw := heldClient(t, "mget", "k", Options{})
	writer := newClient(t, Options{Redis: raw, Encryption: encConfig("")})
	mustSet(t, writer, "k", "old")
	whileHeld(t, h, func() error { _, err := MGet[string](bg, c, []string{"k"}); return err }, func() {
		mustSet(t, c, "k", "new")
	})
	mustAgree(t, c, raw, "k", "new")
}

// GetOrLoad stores what its loader returned; a Set that lands meanwhile wins.
func TestCoherenceLoaderStoreSet(t *testing.T) {
	t.Parallel()
	for name, opts := range fallbackModes() {
		t.Run(name, func(t *testing.T) {
			c, h, raw := heldClient(t, "lease.fill", "k", opts)
			load := func() error {
				_, err := GetOrLoadTTL(bg, c, "k", time.Minute, func(context.Context) (string, error) { return "loaded", nil })
				return err
			}
			whileHeld(t, h, load, func() {
				// The loader's value is in Redis, not yet in L1.
				mustSet(t, c, "k", "set")
			})
			mustAgree(t, c, raw, "k", "set")
		})
	}
}

// Client A's Set is held after Redis applied it; client B then writes the
// key, and A applies B's invalidation before its held Set writes L1. A must
// not keep its own, older value.
//
// In fallback mode (Redis refuses tracking) the invalidation is B's
// announcement on the channel, with a lifetime long enough that only it
// can explain A's agreement.
func TestCoherenceInvalidationSet(t *testing.T) {
	t.Parallel()
	for name, inv := range map[string]Invalidation{"tracking": {}, "fallback": {FallbackL1Lifetime: time.Minute}} {
		t.Run(name, func(t *testing.T) {
			c, h, raw := heldClient(t, "set", "k", Options{Invalidation: &inv})
			b := newClient(t, Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &inv})
			if want := map[string]string{"tracking": "tracking", "fallback": "pubsub"}[name]; c.InvalidationStats().Mode != want {
				t.Fatalf("mode %q, want %q", c.InvalidationStats().Mode, want)
			}
			whileHeld(t, h, func() error { return c.Set(bg, "k", "from-a") }, func() {
				before := c.InvalidationStats().Applied
				mustSet(t, b, "k", "from-b")
				waitWithin(t, 5*time.Second, func() bool { return c.InvalidationStats().Applied >= before+1 })
			})
			mustAgree(t, c, raw, "k", "from-b")
			mustAgree(t, b, raw, "k", "from-b")
		})
	}
}

// TestWritesAnnounced: with Invalidation on, every write path announces
// the full Redis key of what it wrote on the channel, as "ck1 <source>
// <key>" (never a value), for Clients whose Redis refuses tracking.
func TestWritesAnnounced(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{KeyPrefix: "app:", L1MaxBytes: 1 << 20, DefaultTTL: time.Minute,
		Invalidation: &Invalidation{Channel: "inv"}})
	ps := rdb.Subscribe(bg, "inv")
	if _, err := ps.Receive(bg); err != nil {
		t.Fatal(err)
	}
	defer ps.Close()
	mustSet(t, c, "set", "secret")
	if err := c.MSet(bg, map[string]any{"m1": "secret", "m2": "secret"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.SetIfAbsent(bg, "nx", "secret", time.Minute); !ok || err != nil {
		t.Fatalf("SetIfAbsent: %v %v", ok, err)
	}
	if _, err := GetOrLoad(bg, c, "loaded", func(context.Context) (string, error) { return "secret", nil }); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(bg, "set"); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(bg, "m1", "m2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch(bg, "nx", time.Hour); err != nil {
		t.Fatal(err)
	}
	stored, err := c.Raw().Get(bg, "loaded")
	if err != nil {
		t.Fatal(err)
	}
	if done, errs := c.Raw().Swap(bg, []RawSwap{{Key: "loaded", Old: stored, New: stored}}); !done[0] || errs[0] != nil {
		t.Fatalf("Swap: %v %v", done, errs)
	}
	if n, err := c.Raw().DeleteMatching(bg, "loaded"); n != 1 || err != nil {
		t.Fatalf("DeleteMatching: %d %v", n, err)
	}
	want := map[string]int{"app:set": 2, "app:m1": 2, "app:m2": 2, "app:nx": 2, "app:loaded": 3}
	got := map[string]int{}
	source := ""
	for n := 0; n < 11; n++ {
		select {
		case m := <-ps.Channel():
			f := strings.Fields(m.Payload)
			if len(f) != 3 || f[0] != "ck1" || (source != "" && f[1] != source) || strings.Contains(m.Payload, "secret") {
				t.Fatalf("message %q", m.Payload)
			}
			source = f[1]
			got[f[2]]++
		case <-time.After(5 * time.Second):
			t.Fatalf("announced %v, want %v", got, want)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("announced %v, want %v", got, want)
	}
}
