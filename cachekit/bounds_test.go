package cachekit

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// boundedOps are the calls whose bounds and error classes issue 31 pins:
// each reads or writes keys that are not in L1, so each reaches Redis.
func boundedOps(c *Client) []struct {
	name string
	call func(ctx context.Context) error
} {
	n := 0
	fresh := func() string { n++; return "bounded:" + strconv.Itoa(n) }
	return []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"Get", func(ctx context.Context) error { _, err := Get[string](ctx, c, fresh()); return err }},
		{"GetWithTTL", func(ctx context.Context) error { _, _, err := GetWithTTL[string](ctx, c, fresh()); return err }},
		{"Set", func(ctx context.Context) error { return c.Set(ctx, fresh(), "v") }},
		{"Delete", func(ctx context.Context) error { return c.Delete(ctx, fresh()) }},
		{"MGet", func(ctx context.Context) error {
			_, err := MGet[string](ctx, c, []string{fresh(), fresh()})
			return err
		}},
		{"MSet", func(ctx context.Context) error {
			return MSet(ctx, c, map[string]string{fresh(): "a", fresh(): "b"})
		}},
		{"GetOrLoad", func(ctx context.Context) error {
			_, err := GetOrLoad(ctx, c, fresh(), func(context.Context) (string, error) { return "loaded", nil })
			return err
		}},
	}
}

// TestMinimalHungRedisBoundedByAttemptTimeout: Minimal with RedisURL and a
// hung (SIGSTOPped) Redis, no caller deadline: every call returns within
// 2 × AttemptTimeout (the default 200 ms; Reliability is off), and the
// timeout the Client imposed matches ErrTimeout and net.Error.Timeout(),
// never context.DeadlineExceeded (that one is the caller's).
func TestMinimalHungRedisBoundedByAttemptTimeout(t *testing.T) {
	// Not parallel: bounds calls in wall time.
	srv := redistest.Start(t)
	opts := Minimal()
	opts.RedisURL = srv.URL()
	defaultBound(&opts)
	c := newClient(t, opts)
	if err := c.Set(bg, "warm", "v"); err != nil { // a pooled connection, already past its handshake
		t.Fatal(err)
	}
	srv.Pause()
	defer srv.Resume()
	limit := 2 * guard.DefaultAttemptTimeout
	for _, op := range boundedOps(c) {
		start := time.Now()
		err := op.call(bg)
		d := time.Since(start)
		t.Logf("%s against a hung Redis, no deadline: %v", op.name, d.Round(time.Millisecond))
		if d > limit {
			t.Errorf("%s took %v against a hung Redis, want <= %v (2 x AttemptTimeout)", op.name, d, limit)
		}
		var ne net.Error
		switch {
		case !errors.Is(err, ErrTimeout):
			t.Errorf("%s: %v, want an error matching ErrTimeout", op.name, err)
		case !errors.As(err, &ne) || !ne.Timeout():
			t.Errorf("%s: %v, want a net.Error whose Timeout() is true", op.name, err)
		case errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%s: %v matches context.DeadlineExceeded, which is the caller's deadline", op.name, err)
		}
	}
}

// TestLargeSetKeepsTransferAllowance: a large Set against a hung Redis is
// not cut off at AttemptTimeout: it gets the write allowance for its size
// (16 MiB/s) on top, and then it ends with ErrTimeout.
func TestLargeSetKeepsTransferAllowance(t *testing.T) {
	// Not parallel: bounds a call in wall time.
	srv := redistest.Start(t)
	opts := Minimal()
	opts.RedisURL = srv.URL()
	defaultBound(&opts)
	opts.L1MaxBytes = 0
	opts.DisableCompression = true
	c := newClient(t, opts)
	mustSet(t, c, "warm", "v")
	srv.Pause()
	defer srv.Resume()
	v := make([]byte, 8<<20) // 500 ms of allowance: more than the socket buffers take
	allow := guard.DefaultAttemptTimeout + guard.TransferTime(len(v))
	start := time.Now()
	err := c.Set(bg, "large", v)
	d := time.Since(start)
	t.Logf("8 MiB Set against a hung Redis: %v (allowance %v)", d.Round(time.Millisecond), allow)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("large Set: %v, want ErrTimeout", err)
	}
	// The upper slack covers encoding and copying 8 MiB before the write
	// starts: about 300 ms under the race detector on the 2-core machine,
	// 800 ms when other tests loaded it (go-redis's own write timeout,
	// which bounded it before issue 31, was 4.2 s).
	if d < allow-50*time.Millisecond || d > allow+1500*time.Millisecond {
		t.Fatalf("large Set took %v, want about %v (AttemptTimeout + transfer allowance)", d, allow)
	}
}

// TestCallerDeadlineAndCancelMatchContextErrors: a caller's deadline that
// expires while Redis hangs, a ctx cancelled during the call and a ctx
// cancelled before it: the error matches context.DeadlineExceeded or
// context.Canceled for Get, Set, Delete, MGet, MSet and GetOrLoad, on a
// standalone Redis (each preset) and on a Cluster, and the metric's
// error.type says the same.
func TestCallerDeadlineAndCancelMatchContextErrors(t *testing.T) {
	// Not parallel: pauses servers and bounds calls.
	secure, err := Secure("42424242424242424242424242424242424242424242424242424242424242ab")
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		url   string
		pause func()
		cont  func()
	}
	standalone := func(t *testing.T) target {
		srv := redistest.Start(t)
		return target{srv.URL(), srv.Pause, srv.Resume}
	}
	cluster := func(t *testing.T) target {
		cl := redistest.StartCluster(t, 3)
		return target{cl.URL(), func() {
			for _, n := range cl.Nodes {
				n.Pause()
			}
		}, func() {
			for _, n := range cl.Nodes {
				n.Resume()
			}
		}}
	}
	cases := []struct {
		name  string
		opts  Options
		start func(*testing.T) target
	}{
		{"standalone/minimal", Minimal(), standalone},
		{"standalone/production", Production(), standalone},
		{"standalone/secure", secure, standalone},
		{"cluster/minimal", Minimal(), cluster},
		{"cluster/production", Production(), cluster},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg := tc.start(t)
			mp, reader := meterProvider(t)
			opts := tc.opts
			defaultBound(&opts)
			opts.RedisURL = tg.url
			opts.MeterProvider = mp
			if opts.Reliability != nil {
				r := *opts.Reliability
				r.DisableBreaker = true // every call reaches the hung Redis
				opts.Reliability = &r
			}
			c := newClient(t, opts)
			for i := range 8 { // a pooled connection to every node
				mustSet(t, c, "warm"+strconv.Itoa(i), "v")
			}
			tg.pause()
			defer tg.cont()
			kinds := []struct {
				name  string
				want  error
				class string
				ctx   func() (context.Context, context.CancelFunc)
			}{
				{"deadline", context.DeadlineExceeded, "deadline_exceeded", func() (context.Context, context.CancelFunc) {
					return context.WithTimeout(bg, 50*time.Millisecond)
				}},
				{"cancelled-during", context.Canceled, "canceled", func() (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(bg)
					time.AfterFunc(50*time.Millisecond, cancel)
					return ctx, cancel
				}},
				{"cancelled-before", context.Canceled, "canceled", func() (context.Context, context.CancelFunc) {
					ctx, cancel := context.WithCancel(bg)
					cancel()
					return ctx, cancel
				}},
			}
			for _, k := range kinds {
				for _, op := range boundedOps(c) {
					ctx, cancel := k.ctx()
					start := time.Now()
					err := op.call(ctx)
					d := time.Since(start)
					cancel()
					if !errors.Is(err, k.want) {
						t.Errorf("%s, %s: %v (after %v), want an error matching %v", k.name, op.name, err, d.Round(time.Millisecond), k.want)
					}
					if d > 2*guard.DefaultAttemptTimeout {
						t.Errorf("%s, %s took %v", k.name, op.name, d)
					}
				}
				// Every operation's error rows carry the class the caller
				// tests; none says redis.
				for name, v := range collect(t, reader) {
					if v > 0 && containsAll(name, "cachekit.operations{", "error.type=redis") {
						t.Errorf("%s: metric row %s = %v: a caller's %v counted as a Redis error", k.name, name, v, k.want)
					}
				}
				for _, op := range []string{"get", "set", "delete", "mget", "mset", "get_or_load"} {
					found := false
					for name, v := range collect(t, reader) {
						if v > 0 && containsAll(name, "cachekit.operations{", "error.type="+k.class, "op="+op+",") {
							found = true
						}
					}
					if !found {
						t.Errorf("%s: no cachekit.operations row with op=%s and error.type=%s", k.name, op, k.class)
					}
				}
			}
		})
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
