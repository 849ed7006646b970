package l2

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

func TestGetSetRoundTrip(t *testing.T) {
	f := setup(t)
	cases := map[string][]byte{
		"empty":    {},
		"one byte": {0x00},
		"all":      allBytes(),
		"1MiB":     bytes.Repeat([]byte{0xA5, 0x5A, 0x00, 0xFF}, 1<<18),
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			key := "rt:" + name
			if err := f.store.Set(bg, key, v, time.Minute); err != nil {
				t.Fatal(err)
			}
			got, err := f.store.Get(bg, key)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, v) {
				t.Fatalf("Get returned %d bytes, not the %d stored", len(got), len(v))
			}
			if len(got) > 0 {
				got[0] ^= 0xFF // the caller owns the slice: writing must be safe
			}
		})
	}
}

func TestGetMissingIsErrNotFound(t *testing.T) {
	f := setup(t)
	_, err := f.store.Get(bg, "absent")
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get = %v, want ErrNotFound", err)
	}
	if _, ok := asBackend(err); ok {
		t.Fatal("a miss must not be a BackendError")
	}
}

func TestSetSendsPX(t *testing.T) {
	f := setup(t)
	cases := []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{999 * time.Microsecond, 1},
		{time.Millisecond, 1},
		{1500 * time.Microsecond, 1},
		{2 * time.Second, 2000}, // whole seconds still go as PX
		{2500 * time.Millisecond, 2500},
		{90 * 24 * time.Hour, 90 * 24 * 3600 * 1000},
	}
	for _, tc := range cases {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			if err := f.store.Set(bg, "px", []byte("v"), tc.ttl); err != nil {
				t.Fatal(err)
			}
			args := f.hook.lastArgs()
			if len(args) != 5 || args[0] != "set" || args[3] != "px" || args[4] != tc.want {
				t.Fatalf("sent %v args, want set <key> <val> px %d", len(args), tc.want)
			}
			if tc.want < 100 {
				return // may already have expired; the arguments are the point
			}
			pttl := f.rdb.PTTL(bg, "px").Val()
			if pttl <= 0 || pttl > time.Duration(tc.want)*time.Millisecond {
				t.Fatalf("server PTTL %v, want in (0, %dms]", pttl, tc.want)
			}
		})
	}
}

func TestSetTTLHonoured(t *testing.T) {
	f := setup(t)
	if err := f.store.Set(bg, "short", []byte("v"), 100*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Set(bg, "long", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, func() bool {
		_, err := f.store.Get(bg, "short")
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		return errors.Is(err, ErrNotFound)
	}, "a key with a 100ms TTL expiring")
	if _, err := f.store.Get(bg, "long"); err != nil {
		t.Fatalf("long-lived key: %v", err)
	}
}

func TestNonPositiveTTLSendsNothing(t *testing.T) {
	f := setup(t)
	for _, ttl := range []time.Duration{0, -1, -time.Hour} {
		f.hook.reset()
		if err := f.store.Set(bg, "k", []byte("v"), ttl); !errors.Is(err, ErrInvalidTTL) {
			t.Fatalf("Set(ttl=%v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if err := f.store.MSet(bg, []Item{{"a", []byte("v"), time.Minute}, {"b", nil, ttl}}); !errors.Is(err, ErrInvalidTTL) {
			t.Fatalf("MSet(ttl=%v) = %v, want ErrInvalidTTL", ttl, err)
		}
		if ok, err := f.store.TryLock(bg, "l", "t", ttl); ok || !errors.Is(err, ErrInvalidTTL) {
			t.Fatalf("TryLock(ttl=%v) = %v, %v, want ErrInvalidTTL", ttl, ok, err)
		}
		f.hook.want(t, 0, 0)
	}
	if n := f.rdb.Exists(bg, "k", "a", "l").Val(); n != 0 {
		t.Fatalf("%d keys written by refused calls", n)
	}
}

func TestGetWithTTL(t *testing.T) {
	f := setup(t)
	v := allBytes()
	if err := f.store.Set(bg, "k", v, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	f.hook.reset()
	got, ttl, err := f.store.GetWithTTL(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 1)
	if !bytes.Equal(got, v) {
		t.Fatal("wrong value")
	}
	if ttl <= 9*time.Second || ttl > 10*time.Second {
		t.Fatalf("ttl %v, want in (9s, 10s]", ttl)
	}

	if err := f.rdb.Set(bg, "forever", "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, ttl, err := f.store.GetWithTTL(bg, "forever"); err != nil || ttl != 0 || string(got) != "x" {
		t.Fatalf("no-expiry key: ttl %v, err %v", ttl, err)
	}

	f.hook.reset()
	if _, _, err := f.store.GetWithTTL(bg, "absent"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v, want ErrNotFound", err)
	}
	f.hook.want(t, 0, 1)
}

func TestFromPTTL(t *testing.T) {
	cases := []struct {
		in    time.Duration
		ttl   time.Duration
		found bool
	}{
		{-2, 0, false},
		{-1, 0, true},
		{0, time.Millisecond, true},
		{-3, time.Millisecond, true},
		{time.Millisecond, time.Millisecond, true},
		{1234 * time.Millisecond, 1234 * time.Millisecond, true},
	}
	for _, tc := range cases {
		ttl, found := fromPTTL(tc.in)
		if ttl != tc.ttl || found != tc.found {
			t.Errorf("fromPTTL(%v) = %v, %v; want %v, %v", tc.in, ttl, found, tc.ttl, tc.found)
		}
	}
}

func TestDeleteExistsTTL(t *testing.T) {
	f := setup(t)
	for _, k := range []string{"a", "b", "c"} {
		if err := f.store.Set(bg, k, []byte(k), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := f.store.Exists(bg, "a"); err != nil || !ok {
		t.Fatalf("Exists(a) = %v, %v", ok, err)
	}
	if ok, err := f.store.Exists(bg, "zz"); err != nil || ok {
		t.Fatalf("Exists(zz) = %v, %v", ok, err)
	}
	if d, err := f.store.TTL(bg, "a"); err != nil || d <= 59*time.Second || d > time.Minute {
		t.Fatalf("TTL(a) = %v, %v", d, err)
	}
	if _, err := f.store.TTL(bg, "zz"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL(missing) = %v, want ErrNotFound", err)
	}
	f.rdb.Set(bg, "forever", "x", 0)
	if d, err := f.store.TTL(bg, "forever"); err != nil || d != 0 {
		t.Fatalf("TTL(no expiry) = %v, %v; want 0", d, err)
	}

	f.hook.reset()
	if n, err := f.store.Delete(bg); n != 0 || err != nil {
		t.Fatalf("Delete() = %d, %v", n, err)
	}
	f.hook.want(t, 0, 0)
	if n, err := f.store.Delete(bg, "a", "b", "zz"); n != 2 || err != nil {
		t.Fatalf("Delete(a, b, zz) = %d, %v; want 2", n, err)
	}
	f.hook.want(t, 0, 1) // one pipeline: the lease probes and the DELs
	if ok, _ := f.store.Exists(bg, "a"); ok {
		t.Fatal("a survived Delete")
	}
	if ok, _ := f.store.Exists(bg, "c"); !ok {
		t.Fatal("c was deleted")
	}
}

func TestPing(t *testing.T) {
	f := setup(t)
	if err := f.store.Ping(bg); err != nil {
		t.Fatal(err)
	}
	if f.store.Client() != redis.UniversalClient(f.rdb) {
		t.Fatal("Client() is not the client passed to New")
	}
}

func TestClosedStore(t *testing.T) {
	f := setup(t)
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Close(); err != nil {
		t.Fatal("second Close failed")
	}
	s := f.store
	checks := map[string]error{
		"ping": s.Ping(bg),
		"set":  s.Set(bg, "k", nil, time.Minute),
		"mset": s.MSet(bg, nil),
	}
	_, checks["get"] = s.Get(bg, "k")
	_, _, checks["getttl"] = s.GetWithTTL(bg, "k")
	_, checks["del"] = s.Delete(bg, "k")
	_, checks["exists"] = s.Exists(bg, "k")
	_, checks["ttl"] = s.TTL(bg, "k")
	_, checks["mget"] = s.MGet(bg, []string{"k"})
	_, checks["lock"] = s.TryLock(bg, "k", "t", time.Second)
	_, checks["unlock"] = s.Unlock(bg, "k", "t")
	for op, err := range checks {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close = %v, want ErrClosed", op, err)
		}
	}
	if err := f.rdb.Ping(bg).Err(); err != nil {
		t.Fatalf("Store.Close closed the go-redis client: %v", err)
	}
}

func TestNilClientNeverPanics(t *testing.T) {
	s := New(nil)
	if err := s.Ping(bg); err == nil {
		t.Fatal("Ping on a nil client succeeded")
	} else if _, ok := asBackend(err); !ok {
		t.Fatalf("Ping = %T, want *BackendError", err)
	}
	if _, err := s.Get(bg, "k"); err == nil {
		t.Fatal("Get on a nil client succeeded")
	}
	if _, err := s.MGet(bg, []string{"k"}); err == nil {
		t.Fatal("MGet on a nil client succeeded")
	}
}

func TestOpen(t *testing.T) {
	f := setup(t)
	rdb, err := Open(f.srv.URL(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := New(rdb).Ping(bg); err != nil {
		t.Fatal(err)
	}

	const secret = "hunter2-secret"
	bad := []string{
		"http://" + f.srv.Addr(),
		"redis://user:" + secret + "@host:notaport/0",
		"redis://:" + secret + "@localhost:6379/notadb",
		"redis://:" + secret + "@local host/0",
		"\x7f" + secret,
		"",
		"redis+cluster://:" + secret + "@host:notaport",
		"redis+cluster://:" + secret + "@127.0.0.1:7000?addr=127.0.0.1:99999",
		"rediss+cluster://:" + secret + "@127.0.0.1:7000?no_such_option=1",
		"unix+cluster://" + secret,
	}
	for _, u := range bad {
		rdb, err := Open(u, 0, 0)
		if !errors.Is(err, ErrInvalidURL) || rdb != nil {
			t.Errorf("Open(bad URL) = %v, %v; want ErrInvalidURL", rdb, err)
			continue
		}
		if strings.Contains(err.Error(), secret) {
			t.Error("Open error repeats the URL's password")
		}
	}
}

// TestOpenBoundsEveryCall pins the settings that make one caller's retry
// layer the only one and its deadlines effective: no command retries, one
// dial per attempt, ctx deadlines honoured, timeout as the default dial and
// pool timeouts, ioTimeout as the read and write ones, and a URL's own
// timeouts kept.
func TestOpenBoundsEveryCall(t *testing.T) {
	rdb, err := Open("redis://127.0.0.1:1/0?read_timeout=2s", 150*time.Millisecond, 900*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	o := rdb.(*redis.Client).Options()
	if o.MaxRetries != 0 || o.DialerRetries != 1 || !o.ContextTimeoutEnabled {
		t.Fatalf("MaxRetries %d (want 0: -1 normalised), DialerRetries %d (want 1), ContextTimeoutEnabled %v",
			o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled)
	}
	if o.DialTimeout != 150*time.Millisecond || o.PoolTimeout != 150*time.Millisecond || o.WriteTimeout != 900*time.Millisecond {
		t.Fatalf("timeouts dial %v pool %v write %v, want 150ms, 150ms, 900ms", o.DialTimeout, o.PoolTimeout, o.WriteTimeout)
	}
	if o.ReadTimeout != 2*time.Second {
		t.Fatalf("ReadTimeout %v: the URL's read_timeout=2s must win", o.ReadTimeout)
	}
}

// TestOpenClusterBoundsEveryCall: a redis+cluster:// URL yields a cluster
// client seeded with every address it names and bounded as a standalone
// one is.
func TestOpenClusterBoundsEveryCall(t *testing.T) {
	rdb, err := Open("redis+cluster://u:p@127.0.0.1:1?addr=127.0.0.1:2&addr=127.0.0.1:3&read_timeout=2s",
		150*time.Millisecond, 900*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("Open(redis+cluster://) = %T, want *redis.ClusterClient", rdb)
	}
	o := cc.Options()
	if !slices.Equal(o.Addrs, []string{"127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3"}) || o.Username != "u" || o.Password != "p" {
		t.Fatalf("Addrs %v, user %q: want the three seeds and the URL's credentials", o.Addrs, o.Username)
	}
	if o.MaxRetries != -1 || o.DialerRetries != 1 || !o.ContextTimeoutEnabled {
		t.Fatalf("MaxRetries %d (want -1: a cluster client keeps it), DialerRetries %d, ContextTimeoutEnabled %v", o.MaxRetries, o.DialerRetries, o.ContextTimeoutEnabled)
	}
	if o.DialTimeout != 150*time.Millisecond || o.PoolTimeout != 150*time.Millisecond ||
		o.WriteTimeout != 900*time.Millisecond || o.ReadTimeout != 2*time.Second {
		t.Fatalf("timeouts dial %v pool %v write %v read %v", o.DialTimeout, o.PoolTimeout, o.WriteTimeout, o.ReadTimeout)
	}
	tls, err := Open("rediss+cluster://127.0.0.1:7000", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tls.Close()
	if tls.(*redis.ClusterClient).Options().TLSConfig == nil {
		t.Fatal("rediss+cluster:// must turn TLS on")
	}
}

func TestCanceledContext(t *testing.T) {
	f := setup(t)
	ctx, cancel := context.WithCancel(bg)
	cancel()
	_, err := f.store.Get(ctx, "secret-key-name")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context = %v, want context.Canceled", err)
	}
	if be, ok := asBackend(err); !ok || be.Op != "get" {
		t.Fatalf("want *BackendError{Op: get}, got %T", err)
	}
	noKeyIn(t, err, "secret-key-name")

	dctx, dcancel := context.WithDeadline(bg, time.Now().Add(-time.Second))
	defer dcancel()
	if _, err := f.store.MGet(dctx, []string{"a", "b"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("MGet past its deadline = %v, want context.DeadlineExceeded", err)
	}
	if _, _, err := f.store.GetWithTTL(dctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("GetWithTTL past its deadline = %v, want context.DeadlineExceeded", err)
	}
}

// A server error that names the key must not leak it.
func TestServerErrorRedacted(t *testing.T) {
	f := setup(t)
	const key = "tenant:user-42:profile"
	f.rdb.LPush(bg, key, "x")
	_, err := f.store.Get(bg, key)
	be, ok := asBackend(err)
	if !ok {
		t.Fatalf("Get of a list = %v, want *BackendError", err)
	}
	if !strings.HasPrefix(err.Error(), "l2: get: ") || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("message %q lacks the prefix or the server's reason", err.Error())
	}
	var rerr redis.Error
	if !errors.As(be, &rerr) {
		t.Fatal("cause is not reachable as a redis.Error")
	}
	noKeyIn(t, err, key)
}
