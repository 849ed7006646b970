package cachekit

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/l2"
)

// negTTL is the NegativeTTL of the tests' Clients.
const negTTL = time.Minute

// notFound returns a loader that counts its calls in calls and returns
// ErrNotFound.
func notFound(calls *atomic.Int64) func(context.Context) (string, error) {
	return func(context.Context) (string, error) {
		calls.Add(1)
		return "", ErrNotFound
	}
}

// mustNegativeHit fails unless err is a negative hit: a *NegativeHitError
// that matches ErrNotFound.
func mustNegativeHit(t *testing.T, what string, err error) {
	t.Helper()
	var ne *NegativeHitError
	if !errors.As(err, &ne) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("%s = %v, want a negative hit", what, err)
	}
}

// cacheNegative makes c cache key as not found (its loader counted in
// calls) and checks that the loader's own error came back.
func cacheNegative(t *testing.T, c *Client, key string, calls *atomic.Int64) {
	t.Helper()
	_, err := GetOrLoad(bg, c, key, notFound(calls))
	if !errors.Is(err, ErrNotFound) || isNegativeHit(err) {
		t.Fatalf("the loading GetOrLoad = %v, want the loader's ErrNotFound", err)
	}
}

// A loader's "not found" is cached: the next GetOrLoad is a negative hit
// without a load, and every path reads the key as absent (Get, GetWithTTL,
// GetBytes, MGet, Exists, TTL; Touch does not extend it, SetIfPresent
// stores nothing, Raw.Delete deletes it without counting it), in every
// mode of the matrix; SetIfAbsent stores over it.
func TestNegativeEntryIsAbsentToEveryPath(t *testing.T) {
	t.Parallel()
	for name, opts := range modes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			opts.NegativeTTL = negTTL
			c, raw := redisClient(t, opts)
			full := opts.KeyPrefix + c.Raw().StoredKey("k")
			var calls atomic.Int64
			cacheNegative(t, c, "k", &calls)
			if b, _ := raw.Get(bg, full).Bytes(); !l2.IsNegative(b) {
				t.Fatalf("redis holds %q, want a negative entry", b)
			}
			for range 3 {
				_, err := GetOrLoad(bg, c, "k", notFound(&calls))
				mustNegativeHit(t, "GetOrLoad", err)
			}
			if calls.Load() != 1 {
				t.Fatalf("%d loads, want 1", calls.Load())
			}
			_, err := Get[string](bg, c, "k")
			mustNegativeHit(t, "Get", err)
			_, _, err = GetWithTTL[string](bg, c, "k")
			mustNegativeHit(t, "GetWithTTL", err)
			_, err = c.GetBytes(bg, "k")
			mustNegativeHit(t, "GetBytes", err)
			c.FlushLocal() // MGet from Redis too
			mustSet(t, c, "other", "v")
			if m, err := MGet[string](bg, c, []string{"k", "other"}); err != nil || len(m) != 1 || m["other"] != "v" {
				t.Fatalf("MGet = %v, %v", m, err)
			}
			mustBeAbsentToPresence(t, c, "k")
			if d := raw.PTTL(bg, full).Val(); d > negTTL {
				t.Fatalf("Touch extended the negative entry to %v", d)
			}
			if n, err := c.Raw().Delete(bg, "k"); n != 0 || err != nil {
				t.Fatalf("Raw.Delete = %d, %v; want 0 (deleted, not counted)", n, err)
			}
			if n := raw.Exists(bg, full).Val(); n != 0 {
				t.Fatal("Raw.Delete left the negative entry")
			}
			cacheNegative(t, c, "k", &calls)
			if ok, err := c.SetIfAbsent(bg, "k", "inserted", time.Minute); !ok || err != nil {
				t.Fatalf("SetIfAbsent over a negative entry = %v, %v", ok, err)
			}
			if v, err := GetOrLoad(bg, c, "k", notFound(&calls)); err != nil || v != "inserted" {
				t.Fatalf("after SetIfAbsent: %q, %v", v, err)
			}
			if st := c.Stats(); st.NegativeHits < 6 || calls.Load() != 2 {
				t.Fatalf("NegativeHits %d, loads %d", st.NegativeHits, calls.Load())
			}
		})
	}
}

// Every write of the key replaces its negative entry, whoever makes it:
// the writer reads the value at once, another Client (whose L1 held the
// negative entry) within the invalidation bound.
func TestNegativeReplacedByEveryWrite(t *testing.T) {
	t.Parallel()
	writers := map[string]func(a *Client, raw *redis.Client) error{
		"Set":  func(a *Client, _ *redis.Client) error { return a.Set(bg, "k", "new") },
		"MSet": func(a *Client, _ *redis.Client) error { return a.MSet(bg, map[string]any{"k": "new", "j": "x"}) },
		"SetIfAbsent": func(a *Client, _ *redis.Client) error {
			if ok, err := a.SetIfAbsent(bg, "k", "new", time.Minute); !ok || err != nil {
				return fmt.Errorf("SetIfAbsent = %v, %v", ok, err)
			}
			return nil
		},
		"another SDK or redis-cli": func(_ *Client, raw *redis.Client) error {
			return raw.Set(bg, "k", "\xa3new", time.Minute).Err() // msgpack "new", as plain interop bytes
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, raw := withRedis(t)
			o := Options{Redis: raw, L1MaxBytes: 1 << 20, DisableCompression: true, Invalidation: &Invalidation{},
				FleetSingleFlight: true, NegativeTTL: negTTL}
			a, b := newClient(t, o), newClient(t, o)
			var calls atomic.Int64
			cacheNegative(t, a, "k", &calls)
			// b's L1 takes the negative entry (once a's landing's
			// invalidation has reached it: a backfill overlapping it is
			// dropped).
			waitWithin(t, time.Second, func() bool {
				_, err := GetOrLoad(bg, b, "k", notFound(&calls))
				var ne *NegativeHitError
				return errors.As(err, &ne) && ne.Tier == TierL1
			})
			if err := write(a, raw); err != nil {
				t.Fatal(err)
			}
			if v, err := GetOrLoad(bg, a, "k", notFound(&calls)); err != nil || v != "new" {
				t.Fatalf("the writer read %q, %v after its write", v, err)
			}
			waitWithin(t, time.Second, func() bool {
				v, err := GetOrLoad(bg, b, "k", notFound(&calls))
				return err == nil && v == "new"
			})
			if calls.Load() != 1 {
				t.Fatalf("%d loads, want 1", calls.Load())
			}
		})
	}
}

// heldNotFound is heldLoader's loader that returns ErrNotFound once
// released: a lookup that found nothing and is slow to say so.
func heldNotFound(started chan<- struct{}, release <-chan struct{}) func(context.Context) (string, error) {
	held := heldLoader("", started, release)
	return func(ctx context.Context) (string, error) {
		if _, err := held(ctx); err != nil {
			return "", err
		}
		return "", ErrNotFound
	}
}

// The insert race: a loader that found nothing is held while a writer
// inserts the key; the insert wins in Redis and in every Client, and the
// loading caller gets its own "not found" (a negative result never
// overwrites a value). Storing the negative entry unconditionally fails it.
func TestNegativeLoadNeverOverwritesAWrite(t *testing.T) {
	t.Parallel()
	writers := map[string]func(a, b *Client, raw *redis.Client) error{
		"same client Set":  func(a, _ *Client, _ *redis.Client) error { return a.Set(bg, "k", "new") },
		"other client Set": func(_, b *Client, _ *redis.Client) error { return b.Set(bg, "k", "new") },
		"other client SetIfAbsent": func(_, b *Client, _ *redis.Client) error {
			_, err := b.SetIfAbsent(bg, "k", "new", time.Minute)
			return err
		},
		"other client MSet": func(_, b *Client, _ *redis.Client) error { return b.MSet(bg, map[string]any{"k": "new"}) },
	}
	for mode, opts := range leaseModes() {
		for name, write := range writers {
			t.Run(mode+"/"+name, func(t *testing.T) {
				t.Parallel()
				o := opts
				o.NegativeTTL = negTTL
				a, b, raw := loadRace(t, o, func(a *Client, started chan<- struct{}, release <-chan struct{}) error {
					_, err := GetOrLoad(bg, a, "k", heldNotFound(started, release))
					if !errors.Is(err, ErrNotFound) || isNegativeHit(err) {
						return fmt.Errorf("the loading caller got %v, want its loader's not found", err)
					}
					return nil
				}, write)
				if v, _ := raw.Get(bg, "k").Bytes(); l2.IsNegative(v) {
					t.Fatal("the negative entry overwrote the insert in redis")
				}
				for i, c := range []*Client{a, b} {
					if v, err := GetOrLoad(bg, c, "k", notFound(new(atomic.Int64))); err != nil || v != "new" {
						t.Fatalf("client %d reads %q, %v after the insert", i, v, err)
					}
				}
				if st := a.Stats(); st.LeasesLost != 1 {
					t.Fatalf("LeasesLost = %d, want 1", st.LeasesLost)
				}
			})
		}
	}
}

// A negative entry is authenticated: bytes planted with a raw SET that are
// forged, copied from another key or tenant, truncated, re-marked (a
// value's entry behind the head, a negative entry without it) or an
// expired one replayed never read as "not found" from the cache nor as a
// value: they read as an entry that cannot be opened (IOP-24), and
// GetOrLoad runs the loader and replaces them. Without the authentication,
// or without the not-after, it fails.
func TestNegativeEntryForgeriesReadAsUnopenable(t *testing.T) {
	t.Parallel()
	for name, base := range map[string]Options{
		"encrypted":          {Encryption: encConfig("")},
		"encrypted/nocompr":  {Encryption: encConfig(""), DisableCompression: true},
		"encrypted/prefixed": {Encryption: encConfig("t1"), KeyPrefix: "app:"},
		"plain":              {},
		"plain/nocompr":      {DisableCompression: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, raw := withRedis(t)
			clk := testenv.NewClock(time.Now())
			o := base
			o.Redis, o.L1MaxBytes, o.NegativeTTL, o.Clock = raw, 1<<20, negTTL, clk.Now
			c := newClient(t, o)
			full := func(k string) string { return o.KeyPrefix + k }
			var calls atomic.Int64
			genuine := func(via *Client, prefix, key string) []byte {
				cacheNegative(t, via, key, &calls)
				b, err := raw.Get(bg, prefix+key).Bytes()
				if err != nil || !l2.IsNegative(b) {
					t.Fatalf("no negative entry under %q: %q, %v", key, b, err)
				}
				return b
			}
			own := genuine(c, o.KeyPrefix, "k")
			other := genuine(c, o.KeyPrefix, "k2")
			o2 := o // another tenant; without encryption, another prefix
			o2.KeyPrefix = "other:"
			if o2.Encryption != nil {
				o2.Encryption = encConfig("another-tenant")
			}
			tenant := genuine(newClient(t, o2), o2.KeyPrefix, "k")
			mustSetTTL(t, c, "v", "123456789", time.Minute) // a 38-byte entry encrypted without compression
			value := raw.Get(bg, full("v")).Val()
			forged := append([]byte(l2.NegativeMagic), make([]byte, l2.NegativeLen-len(l2.NegativeMagic))...)
			forged[20] = 1
			// Expired and replayed: sealed for 1 s, replayed a minute later.
			_, err := GetOrLoad(bg, c, "old", func(ctx context.Context) (string, error) {
				_ = OverrideTTL(ctx, time.Second)
				return "", ErrNotFound
			})
			if !errors.Is(err, ErrNotFound) {
				t.Fatal(err)
			}
			expired := raw.Get(bg, full("old")).Val()
			clk.Add(time.Minute)
			c.FlushLocal()
			type planted struct {
				key string
				b   []byte
			}
			cases := map[string]planted{
				"forged":                     {"k", forged},
				"copied from another key":    {"k", other},
				"copied from another tenant": {"k", tenant},
				"truncated":                  {"k", own[:len(own)-1]},
				"cut to the head":            {"k", own[:len(l2.NegativeMagic)+10]},
				"value behind the head":      {"k", append([]byte(l2.NegativeMagic), value...)},
				"head stripped":              {"k", own[len(l2.NegativeMagic):]},
				"expired and replayed":       {"old", []byte(expired)}, // its own key, a minute past its 1 s
			}
			for what, p := range cases {
				if err := raw.Set(bg, full(p.key), p.b, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				c.FlushLocal()
				_, err := Get[string](bg, c, p.key)
				var ee *EntryError
				if isNegativeHit(err) || !errors.As(err, &ee) || !ee.Unopenable {
					t.Errorf("%s: Get = %v, want an entry that cannot be opened", what, err)
					continue
				}
				before := calls.Load()
				v, err := GetOrLoad(bg, c, p.key, func(context.Context) (string, error) { calls.Add(1); return "loaded", nil })
				if err != nil || v != "loaded" || calls.Load() != before+1 {
					t.Errorf("%s: GetOrLoad = %q, %v (%d loads), want the loader's value", what, v, err, calls.Load()-before)
				}
				if got, _ := Get[string](bg, c, p.key); got != "loaded" {
					t.Errorf("%s: the load did not replace it (%q)", what, got)
				}
			}
		})
	}
}

// The three kinds of "not found" GetOrLoad can return or act on: a
// negative hit (no load), a plain miss and FailOpen's *MissError (both
// load); the loading call returns its loader's own error.
func TestNegativeHitToldFromMissAndMissError(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	c := newClient(t, Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL,
		Reliability: &Reliability{FailOpen: true, MaxAttempts: 1}})
	if _, err := Get[string](bg, c, "k"); err != ErrNotFound {
		t.Fatalf("a plain miss = %v, want ErrNotFound itself", err)
	}
	var calls atomic.Int64
	cacheNegative(t, c, "k", &calls) // a miss: loads
	_, err := GetOrLoad(bg, c, "k", notFound(&calls))
	mustNegativeHit(t, "GetOrLoad", err)
	c.FlushLocal()
	srv.Stop()
	t.Cleanup(srv.Restart)
	_, err = Get[string](bg, c, "k")
	var me *MissError
	if !errors.As(err, &me) || isNegativeHit(err) {
		t.Fatalf("Get during an outage = %v, want a *MissError", err)
	}
	if _, err := GetOrLoad(bg, c, "k", notFound(&calls)); !errors.Is(err, ErrNotFound) || isNegativeHit(err) {
		t.Fatalf("GetOrLoad during an outage = %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d loads, want 2 (the miss and the degraded read)", calls.Load())
	}
}

// Once a Set returns, no read in its process returns the cached "not
// found"; in another process, none past the invalidation bound: here a
// Client whose L1 holds the negative entry, and the writer's own.
func TestNegativeInvalidatedAcrossClients(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	o := Options{Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig(""), Invalidation: &Invalidation{}, NegativeTTL: negTTL}
	a, b := newClient(t, o), newClient(t, o)
	var calls atomic.Int64
	for round := range 20 {
		key := fmt.Sprintf("k%d", round)
		cacheNegative(t, a, key, &calls)
		for _, c := range []*Client{a, b, b} { // b's second read is from its L1
			_, err := GetOrLoad(bg, c, key, notFound(&calls))
			mustNegativeHit(t, "before the Set", err)
		}
		mustSet(t, a, key, "v")
		if v, err := Get[string](bg, a, key); err != nil || v != "v" {
			t.Fatalf("the writer read %q, %v", v, err)
		}
		waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, b, key); return v == "v" })
	}
	if st := b.Stats(); st.NegativeHits < 40 { // and those read before an invalidation arrived
		t.Fatalf("b's NegativeHits = %d, want at least 40", st.NegativeHits)
	}
}

// MGetOrLoad caches the keys its loader leaves out: three calls over one
// present and two missing keys ask the loader for three keys in all (seven
// without negative caching).
func TestMGetOrLoadCachesLeftOutKeys(t *testing.T) {
	t.Parallel()
	for name, ttl := range map[string]time.Duration{"negative": negTTL, "off": 0} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for mode, opts := range map[string]Options{
				"redis":   {Encryption: encConfig(""), L1MaxBytes: 1 << 20},
				"noL1":    {Encryption: encConfig("")},
				"L1 only": {Encryption: encConfig(""), L1MaxBytes: 1 << 20},
			} {
				opts.NegativeTTL = ttl
				var c *Client
				if mode == "L1 only" {
					c = newClient(t, opts)
				} else {
					c, _ = redisClient(t, opts)
				}
				asked := 0
				for range 3 {
					m, err := MGetOrLoad(bg, c, []string{"present", "gone1", "gone2"}, func(_ context.Context, keys []string) (map[string]int, error) {
						asked += len(keys)
						out := map[string]int{}
						for _, k := range keys {
							if k == "present" {
								out[k] = 1
							}
						}
						return out, nil
					})
					if err != nil || len(m) != 1 || m["present"] != 1 {
						t.Fatalf("%s: MGetOrLoad = %v, %v", mode, m, err)
					}
				}
				want := 3
				if ttl == 0 {
					want = 7
				}
				if asked != want {
					t.Fatalf("%s: the loader was asked for %d keys, want %d", mode, asked, want)
				}
			}
		})
	}
}

// OverrideTTL before ErrNotFound sets the negative entry's TTL, capped at
// MaxNegativeTTL.
func TestNegativeOverrideTTL(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Encryption: encConfig(""), NegativeTTL: negTTL})
	for key, d := range map[string]time.Duration{"short": 5 * time.Second, "long": 5 * time.Hour} {
		_, err := GetOrLoad(bg, c, key, func(ctx context.Context) (string, error) {
			if err := OverrideTTL(ctx, d); err != nil {
				return "", err
			}
			return "", ErrNotFound
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		want := min(d, MaxNegativeTTL)
		if got := raw.PTTL(bg, key).Val(); got > want || got < want-time.Second {
			t.Errorf("%s: PTTL %v, want about %v", key, got, want)
		}
	}
}

// NegativeTTL is off in every preset, capped, and refused in interop mode;
// a Client with it off reads another's negative entry as not found and
// GetOrLoad loads and replaces it.
func TestNegativeTTLOptions(t *testing.T) {
	t.Parallel()
	sec, err := Secure(fmt.Sprintf("%x", testKey))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []Options{Minimal(), Production(), sec} {
		if o.NegativeTTL != 0 {
			t.Errorf("%s preset: NegativeTTL %v, want 0", o.Preset, o.NegativeTTL)
		}
	}
	for name, o := range map[string]Options{
		"over the cap": {L1MaxBytes: 1 << 20, NegativeTTL: MaxNegativeTTL + time.Second},
		"negative":     {L1MaxBytes: 1 << 20, NegativeTTL: -time.Second},
		"interop":      {L1MaxBytes: 1 << 20, Interop: true, NegativeTTL: time.Second},
	} {
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New = %v, want ErrConfig", name, err)
		}
	}
	_, raw := withRedis(t)
	on := newClient(t, Options{Redis: raw, Encryption: encConfig(""), NegativeTTL: 300 * time.Millisecond})
	off := newClient(t, Options{Redis: raw, Encryption: encConfig("")})
	var calls atomic.Int64
	cacheNegative(t, on, "k", &calls)
	if d := raw.PTTL(bg, "k").Val(); d <= 900*time.Millisecond {
		t.Fatalf("a sub-second NegativeTTL stored for %v, want 1 s", d)
	}
	_, err = Get[string](bg, off, "k")
	mustNegativeHit(t, "Get of a Client with it off", err)
	if v, err := GetOrLoad(bg, off, "k", func(context.Context) (string, error) { return "v", nil }); err != nil || v != "v" {
		t.Fatalf("GetOrLoad of a Client with it off = %q, %v", v, err)
	}
	if v, err := Get[string](bg, on, "k"); err != nil || v != "v" {
		t.Fatalf("the load did not replace the negative entry: %q, %v", v, err)
	}
}

// An SWR refresh whose loader finds the key gone caches the "not found"
// over the entry it served.
func TestSWRRefreshCachesNotFound(t *testing.T) {
	t.Parallel()
	c, clk := swrClient(t, func(o *Options) { o.NegativeTTL = negTTL })
	var gone atomic.Bool
	load := func(context.Context) (string, error) {
		if gone.Load() {
			return "", ErrNotFound
		}
		return "v", nil
	}
	if v, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil || v != "v" {
		t.Fatalf("cold: %q, %v", v, err)
	}
	gone.Store(true)
	clk.Add(swrDue)
	if v, err := GetOrLoadTTL(bg, c, "k", swrTTL, load); err != nil || v != "v" {
		t.Fatalf("stale read: %q, %v", v, err)
	}
	waitWithin(t, 5*time.Second, func() bool {
		_, err := GetOrLoadTTL(bg, c, "k", swrTTL, load)
		return isNegativeHit(err)
	})
}

// A negative hit is counted in Stats and in cachekit.operations as outcome
// negative_hit, with the tier that held it.
func TestNegativeHitMetrics(t *testing.T) {
	t.Parallel()
	mp, reader := meterProvider(t)
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL, MeterProvider: mp})
	var calls atomic.Int64
	cacheNegative(t, c, "k", &calls)
	_, _ = GetOrLoad(bg, c, "k", notFound(&calls)) // L1
	c.FlushLocal()
	_, _ = Get[string](bg, c, "k") // L2, backfilled
	_, _ = MGet[string](bg, c, []string{"k"})
	got := collect(t, reader)
	for k, v := range map[string]float64{
		"cachekit.operations{op=get_or_load,outcome=miss,tier=none}":       1,
		"cachekit.operations{op=get_or_load,outcome=negative_hit,tier=l1}": 1,
		"cachekit.operations{op=get,outcome=negative_hit,tier=l2}":         1,
		"cachekit.operations{op=mget,outcome=negative_hit,tier=l1}":        1,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if st := c.Stats(); st.NegativeHits != 3 || st.L1Hits != 0 || st.L2Hits != 0 {
		t.Errorf("Stats: NegativeHits %d, L1Hits %d, L2Hits %d; want 3, 0, 0", st.NegativeHits, st.L1Hits, st.L2Hits)
	}
	if t.Failed() {
		t.Logf("collected: %v", got)
	}
}

// Without Redis (L1-only mode) a "not found" is cached in L1, and the
// conditional writes and Touch treat it as absent.
func TestNegativeL1Only(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL})
	var calls atomic.Int64
	cacheNegative(t, c, "k", &calls)
	_, err := GetOrLoad(bg, c, "k", notFound(&calls))
	mustNegativeHit(t, "GetOrLoad", err)
	mustBeAbsentToPresence(t, c, "k")
	if ok, _ := c.SetIfAbsent(bg, "k", "x", time.Minute); !ok {
		t.Fatal("SetIfAbsent refused a negative entry")
	}
	if v, err := Get[string](bg, c, "k"); err != nil || v != "x" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// Raw shows a negative entry: Open reports it with its not-after and
// keyring entry, Scan returns its bytes, Swap re-seals it (as rotate does).
func TestNegativeEntryThroughRaw(t *testing.T) {
	t.Parallel()
	c, raw := redisClient(t, Options{Encryption: encConfig(""), NegativeTTL: negTTL})
	var calls atomic.Int64
	before := time.Now()
	cacheNegative(t, c, "k", &calls)
	stored, err := c.Raw().Get(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	op, err := c.Raw().Open(bg, "k", stored)
	if err != nil || !op.Negative || op.KeyIndex != 0 || op.NotAfter.Before(before.Add(negTTL-time.Second)) || op.NotAfter.After(time.Now().Add(negTTL)) {
		t.Fatalf("Open = %+v, %v", op, err)
	}
	if _, err := c.Raw().Open(bg, "other", stored); err == nil {
		t.Fatal("Open under another key authenticated the negative entry")
	}
	var seen int
	if err := c.Raw().Scan(bg, "*", func(b []RawEntry) error {
		for _, e := range b {
			if _, ok := NegativeSealed(e.Stored); ok && e.Key == "k" {
				seen++
			}
		}
		return nil
	}); err != nil || seen != 1 {
		t.Fatalf("Scan saw %d negative entries, %v", seen, err)
	}
	sealed, _ := NegativeSealed(stored)
	resealed := append([]byte(l2.NegativeMagic), sealed...)
	resealed[len(resealed)-1] ^= 1 // a swap to other bytes, as a re-seal writes
	if done, errs := c.Raw().Swap(bg, []RawSwap{{Key: "k", Old: stored, New: resealed}}); !done[0] || errs[0] != nil {
		t.Fatalf("Swap = %v, %v", done, errs)
	}
	if b, _ := raw.Get(bg, "k").Bytes(); string(b) != string(resealed) {
		t.Fatal("Swap did not write")
	}
	if n, err := c.Raw().DeleteMatching(bg, "*"); n != 1 || err != nil {
		t.Fatalf("DeleteMatching = %d, %v", n, err)
	}
}

// A negative entry's kind is decided by its head before any AES-GCM open,
// on L1 as on L2: a negative hit is one open (its own), and no failed
// value open is counted as an authentication failure. Redis's copy is
// backfilled into L1 and read there too.
func TestNegativeHitIsOneOpen(t *testing.T) {
	t.Parallel()
	_, raw := withRedis(t)
	for name, o := range map[string]Options{
		"l1 only":  {L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL},
		"l1 of l2": {Redis: raw, L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL, KeyPrefix: "one-open:"},
		"l2 only":  {Redis: raw, Encryption: encConfig(""), NegativeTTL: negTTL, KeyPrefix: "one-open-l2:"},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, o)
			var calls atomic.Int64
			cacheNegative(t, c, "k", &calls)
			if _, err := Get[string](bg, c, "k"); !isNegativeHit(err) { // L2: backfills L1
				t.Fatalf("Get = %v, want a negative hit", err)
			}
			before := c.enc.Stats()
			const reads = 10
			for range reads {
				_, err := Get[string](bg, c, "k")
				mustNegativeHit(t, "Get", err)
			}
			after := c.enc.Stats()
			opens := uint64(0)
			for i := range after.DecryptsByKey {
				opens += after.DecryptsByKey[i] - before.DecryptsByKey[i]
			}
			if fails := after.AuthFailures - before.AuthFailures; opens != reads || fails != 0 {
				t.Fatalf("%d negative hits: %d opens, %d authentication failures; want %d and 0", reads, opens, fails, reads)
			}
		})
	}
}

// A negative L1 entry read with a ctx that has ended is still a negative
// hit: the head decides the kind before the ctx is asked, and no internal
// error reaches the caller.
func TestNegativeL1HitWithEndedCtx(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), NegativeTTL: negTTL})
	var calls atomic.Int64
	cacheNegative(t, c, "k", &calls)
	ended, cancel := context.WithCancel(bg)
	cancel()
	_, err := Get[string](ended, c, "k")
	mustNegativeHit(t, "Get", err)
	_, err = GetOrLoad(ended, c, "k", notFound(&calls))
	mustNegativeHit(t, "GetOrLoad", err)
}
