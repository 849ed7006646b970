package cachekit

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

type profile struct {
	ID    int64             `msgpack:"id"`
	Name  string            `msgpack:"name"`
	Email string            `msgpack:"email"`
	Tags  []string          `msgpack:"tags"`
	Attrs map[string]string `msgpack:"attrs"`
	Blob  []byte            `msgpack:"blob"`
}

func sampleProfile() profile {
	return profile{ID: 1 << 40, Name: "Zoë Ångström", Email: "z@example.com", Tags: []string{"a", "b"},
		Attrs: map[string]string{"tier": "gold"}, Blob: []byte{0, 1, 2, 255}}
}

func TestRoundTripAllModes(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	for name, opts := range modes() {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			c := newClient(t, opts)
			ctx := bg
			p := sampleProfile()
			if err := c.SetWithTTL(ctx, name+":struct", p, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := Get[profile](ctx, c, name+":struct")
			if err != nil || !reflect.DeepEqual(got, p) {
				t.Fatalf("struct: got %+v, %v", got, err)
			}
			m := map[string]any{"n": int64(-7), "s": "x", "f": 1.5, "ok": true}
			if err := c.Set(ctx, name+":map", m); err != nil {
				t.Fatal(err)
			}
			var gm map[string]any
			if err := c.Get(ctx, name+":map", &gm); err != nil {
				t.Fatal(err)
			}
			if gm["s"] != "x" || gm["f"] != 1.5 || gm["ok"] != true || toInt(gm["n"]) != -7 {
				t.Fatalf("map: %#v", gm)
			}
			raw := []byte("raw bytes \x00\xff")
			if err := c.Set(ctx, name+":bytes", raw); err != nil {
				t.Fatal(err)
			}
			gb, err := c.GetBytes(ctx, name+":bytes")
			if err != nil || string(gb) != string(raw) {
				t.Fatalf("bytes: %q %v", gb, err)
			}
			if err := c.Set(ctx, name+":str", "hello"); err != nil {
				t.Fatal(err)
			}
			if s, err := Get[string](ctx, c, name+":str"); err != nil || s != "hello" {
				t.Fatalf("string: %q %v", s, err)
			}
			if err := c.Set(ctx, name+":int", uint64(1<<63)); err != nil {
				t.Fatal(err)
			}
			if n, err := Get[uint64](ctx, c, name+":int"); err != nil || n != 1<<63 {
				t.Fatalf("int: %d %v", n, err)
			}
			// A second client with the same options reads from Redis (cold L1).
			c2 := newClient(t, opts)
			if got, err := Get[profile](ctx, c2, name+":struct"); err != nil || !reflect.DeepEqual(got, p) {
				t.Fatalf("cold read: %+v %v", got, err)
			}
			if _, err := Get[profile](ctx, c2, name+":missing"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing: %v, want ErrNotFound", err)
			}
		})
	}
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	case uint8:
		return int64(n)
	}
	return 1 << 62
}

func TestL1OnlyMode(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSet(t, c, "k", "v")
	if v, err := Get[string](bg, c, "k"); err != nil || v != "v" {
		t.Fatalf("got %q %v", v, err)
	}
	if err := c.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := Get[string](bg, c, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

// TestInvalidTTLRejectedBeforeIO: a zero, negative or over-30-day TTL is
// ErrInvalidTTL before any I/O: no TTL spelling reaches "never expire",
// which cachekit-go does not offer (PRE-4).
func TestInvalidTTLRejectedBeforeIO(t *testing.T) {
	t.Parallel()
	srv, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20})
	srv.Kill() // any I/O would now fail with a backend error
	for _, ttl := range []time.Duration{0, -time.Second, 31 * 24 * time.Hour} {
		if err := c.SetWithTTL(bg, "k", 1, ttl); !errors.Is(err, ErrInvalidTTL) {
			t.Errorf("ttl %v: %v, want ErrInvalidTTL", ttl, err)
		}
	}
}

func TestSubSecondTTLCeiledAndExpiry(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20})
	mustSetTTL(t, c, "short", "v", 10*time.Millisecond)
	d, err := c.TTL(bg, "short")
	if err != nil || d <= 500*time.Millisecond || d > time.Second {
		t.Fatalf("TTL after sub-second set = %v, %v; want ceiled to 1s", d, err)
	}
	// Redis expires the key on its own clock, a real second: poll for it.
	if !testwait.Until(5*time.Second, func() bool {
		_, err = Get[string](bg, c, "short")
		return errors.Is(err, ErrNotFound) // expired in both tiers
	}) {
		t.Fatalf("entry still readable 5s after a 1s TTL: %v", err)
	}
}

func TestBackfillBoundedByRemainingTTL(t *testing.T) {
	t.Parallel()
	writer, rdb := redisClient(t, Options{Encryption: encConfig("")})
	mustSetTTL(t, writer, "bf", "v", 2*time.Second)
	// Shorten the Redis TTL behind the client's back: the reader must not
	// keep the entry in L1 longer than Redis does.
	if err := rdb.PExpire(bg, "bf", 1200*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	// The reader's L1 expires entries by clk: the test moves it past the
	// remaining Redis TTL instead of waiting for that TTL to run out.
	clk := testenv.NewClock(time.Now())
	reader := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), Clock: clk.Now})
	if _, err := Get[string](bg, reader, "bf"); err != nil {
		t.Fatal(err)
	}
	if st := reader.Stats(); st.L2Hits != 1 {
		t.Fatalf("first read should come from L2: %+v", st)
	}
	if left, ok := reader.l1.Remaining("bf"); !ok || left > 1200*time.Millisecond {
		t.Fatalf("the backfill holds the entry in L1 for %v (held %v), more than the 1.2s Redis has left", left, ok)
	}
	clk.Add(1600 * time.Millisecond) // Redis's 1.2s have passed, the 2s of the write have not
	before := reader.Stats()
	v, err := Get[string](bg, reader, "bf") // Redis still holds it: its clock is real
	if st := reader.Stats(); st.L1Hits != before.L1Hits {
		t.Fatalf("L1 outlived the remaining L2 TTL: served %q, %v from L1 1.6s after 1.2s were left", v, err)
	}
}

func TestCloseReturnsErrClosedAndLeavesInjectedClientOpen(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	c, err := New(Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, c, "k", 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	checks := map[string]error{
		"Set":    c.Set(bg, "k", 2),
		"Get":    c.Get(bg, "k", new(int)),
		"Delete": c.Delete(bg, "k"),
		"MSet":   c.MSetWithTTL(bg, map[string]any{"a": 1}, time.Minute),
	}
	_, checks["Exists"] = c.Exists(bg, "k")
	_, checks["GetBytes"] = c.GetBytes(bg, "k")
	_, checks["MGet"] = MGet[int](bg, c, []string{"k"})
	_, checks["GetOrLoad"] = GetOrLoadTTL(bg, c, "k", time.Minute, func(ctx context.Context) (int, error) { return 1, nil })
	for name, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	if err := rdb.Ping(bg).Err(); err != nil {
		t.Fatalf("injected client was closed: %v", err)
	}
}

// TestOptionsValidation: Options that cannot be used fail New with
// ErrConfig, at construction, never on first use: secure without a key
// (PRE-20, PRE-21, PRE-50), an option the configuration does not support,
// such as SWR or invalidation without Redis or a prefix in interop mode
// (PRE-33, PRE-49), keys of the wrong length; and CACHEKIT_MASTER_KEY alone
// encrypts nothing.
func TestOptionsValidation(t *testing.T) {
	// Not parallel: t.Setenv.
	bad := map[string]Options{
		"no storage":                   {},
		"secure without key":           {L1MaxBytes: 1, RequireEncryption: true},
		"interop with prefix":          {L1MaxBytes: 1, Interop: true, KeyPrefix: "p:"},
		"negative L1":                  {L1MaxBytes: -1},
		"jitter":                       {L1MaxBytes: 1, L1TTLJitter: 0.9},
		"ttl too long":                 {L1MaxBytes: 1, DefaultTTL: 31 * 24 * time.Hour},
		"SWR without Redis":            {L1MaxBytes: 1, SWR: &SWR{}},
		"tracking, no Redis":           {L1MaxBytes: 1, Invalidation: &Invalidation{}},
		"secure preset, no encryption": {L1MaxBytes: 1, Preset: PresetSecure},
		"malformed RedisURL":           {RedisURL: "http://x"},
		"all-zero key":                 {L1MaxBytes: 1, Encryption: &encryption.Config{MasterKey: make([]byte, 32)}},
		"short key":                    {L1MaxBytes: 1, Encryption: &encryption.Config{MasterKey: make([]byte, 16)}},
		"negative large bound":         {L1MaxBytes: 1, LargeValueConcurrency: -1},
		"unbounded and a bound":        {L1MaxBytes: 1, LargeValueConcurrency: 2, UnboundedLargeValues: true},
		"negative duration sampling":   {L1MaxBytes: 1, L2DurationSample: -1},
	}
	for name, o := range bad {
		if _, err := New(o); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
	t.Setenv(MasterKeyEnv, "")
	if _, err := Secure(""); !errors.Is(err, ErrConfig) {
		t.Errorf("Secure without any key: %v", err)
	}
	t.Setenv(MasterKeyEnv, strings.Repeat("ab", 32))
	o, err := Secure("")
	if err != nil || o.Encryption == nil || !o.RequireEncryption {
		t.Fatalf("Secure from env: %+v %v", o, err)
	}
	// The key variable alone never switches encryption on.
	p := Minimal()
	c := newClient(t, p)
	if c.Encrypted() {
		t.Fatal("production preset encrypted because CACHEKIT_MASTER_KEY is set")
	}
}

// TestSecureFromEnvironment: Secure("") takes the whole keyring from the
// environment (PRE-51): an entry sealed under the previous key still opens
// after a rotation; a malformed key in either variable is ErrConfig (and
// the encryption package's error), naming the variable, never the key.
// With no key argument Secure falls back to CACHEKIT_MASTER_KEY (PRE-19),
// and it supports previous keys, so it reads CACHEKIT_PREVIOUS_MASTER_KEYS
// rather than ignore it (PRE-52).
func TestSecureFromEnvironment(t *testing.T) {
	// Not parallel: t.Setenv.
	oldHex, newHex := strings.Repeat("a1", 32), strings.Repeat("b2", 32)
	t.Setenv(PreviousMasterKeysEnv, "")
	t.Setenv(MasterKeyEnv, oldHex)
	before, err := Secure("")
	if err != nil {
		t.Fatal(err)
	}
	before.SWR, before.Invalidation, before.L1MaxBytes = nil, nil, 0
	before.RedisURL = redistest.Start(t).URL()
	w := newClient(t, before)
	mustSet(t, w, "k", "sealed under the old key")
	t.Setenv(MasterKeyEnv, newHex)
	t.Setenv(PreviousMasterKeysEnv, " "+oldHex+" ")
	after, err := Secure("")
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Encryption.PreviousKeys) != 1 {
		t.Fatalf("%d previous keys read from %s, want 1", len(after.Encryption.PreviousKeys), PreviousMasterKeysEnv)
	}
	after.SWR, after.Invalidation, after.L1MaxBytes, after.RedisURL = nil, nil, 0, before.RedisURL
	r := newClient(t, after)
	if v, err := Get[string](bg, r, "k"); err != nil || v != "sealed under the old key" {
		t.Fatalf("reading an old-key entry after the rotation: %q, %v", v, err)
	}

	for name, env := range map[string][2]string{
		"bad current":  {"zz" + newHex[2:], ""},
		"bad previous": {newHex, oldHex + ",xyz"},
		"zero current": {strings.Repeat("00", 32), ""},
	} {
		t.Setenv(MasterKeyEnv, env[0])
		t.Setenv(PreviousMasterKeysEnv, env[1])
		_, err := Secure("")
		if !errors.Is(err, ErrConfig) || !errors.Is(err, encryption.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrConfig and encryption.ErrInvalidConfig", name, err)
		}
		if err != nil && (strings.Contains(err.Error(), newHex[4:]) || strings.Contains(err.Error(), oldHex[4:])) {
			t.Errorf("%s: the error repeats a key: %v", name, err)
		}
	}
}

// TestRedisURLCluster: a redis+cluster:// RedisURL gives the Client a
// cluster client, so keys in every slot are written and read back, and
// MGet spans the masters.
func TestRedisURLCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	opts := Minimal()
	opts.RedisURL = cl.URL()
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	keys := make([]string, 50)
	for i := range keys {
		keys[i] = "k" + strings.Repeat("x", i)
		if err := c.SetWithTTL(ctx, keys[i], i, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	got, err := MGet[int](ctx, c, keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("MGet over a cluster URL: %d values, %v", len(got), err)
	}
	for i, k := range keys {
		if got[k] != i {
			t.Fatalf("%d: got %d", i, got[k])
		}
	}
}

// TestCloseLeavesNoGoroutine: a Client running every background part
// (invalidation tracking, SWR, a name-key marker keeper, a fence in
// progress against a server that no longer answers, lease renewals) leaves
// no goroutine of the module a second after Close; Close is idempotent and
// every call after it returns ErrClosed.
func TestCloseLeavesNoGoroutine(t *testing.T) {
	// Not parallel: counts the module's goroutines.
	srv, _ := withRedis(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	o := Production()
	o.RedisURL = proxy.URL()
	o.Encryption = namedOpts(testNameKey).Encryption
	c, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 5*time.Second, func() bool { return c.InvalidationStats().Tracking })
	for i := range 8 {
		if _, err := GetOrLoad(bg, c, fmt.Sprint("k", i), func(context.Context) (string, error) { return "v", nil }); err != nil {
			t.Fatal(err)
		}
	}
	// A server that no longer answers, and a write whose connection then
	// fails: its fence keeps trying until Close.
	proxy.BlackHole()
	_ = c.Set(bg, "k0", "late")
	noGoroutinesAfterClose(t, c)
	if err := c.Close(); err != nil {
		t.Fatalf("a second Close = %v", err)
	}
	if err := c.Set(bg, "k", "v"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Set after Close = %v, want ErrClosed", err)
	}
}
