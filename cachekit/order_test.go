package cachekit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// orderCase is a write whose bytes a proxy delays past its deadline,
// then the next write of the same Client, and what every reader must see
// once the delayed bytes have gone.
type orderCase struct {
	name    string
	delayed func(ctx context.Context, c *Client) error
	next    func(c *Client) error
	want    string // "" : the key is missing
	// minTTL, when positive, is the least TTL the key must have left (a
	// delayed Touch landing late would shorten it).
	minTTL time.Duration
	// offStream: the delayed write never goes on the auto-pipelined
	// stream (a multi-key call), so no other callers run beside it: the
	// proxy must delay its connection, not theirs.
	offStream bool
}

func orderCases() []orderCase {
	return []orderCase{
		{"Set then Set", func(ctx context.Context, c *Client) error { return c.Set(ctx, "k", "old") },
			func(c *Client) error { return c.Set(bg, "k", "new") }, "new", 0, false},
		{"Set then Delete", func(ctx context.Context, c *Client) error { return c.Set(ctx, "k", "old") },
			func(c *Client) error { return c.Delete(bg, "k") }, "", 0, false},
		{"Delete then Set", func(ctx context.Context, c *Client) error { return c.Delete(ctx, "k") },
			func(c *Client) error { return c.Set(bg, "k", "new") }, "new", 0, false},
		{"MSet then Set", func(ctx context.Context, c *Client) error {
			return MSet(ctx, c, map[string]string{"k": "old", "k2": "x"})
		}, func(c *Client) error { return c.Set(bg, "k", "new") }, "new", 0, true},
		{"SetIfPresent then Set", func(ctx context.Context, c *Client) error {
			_, err := c.SetIfPresent(ctx, "k", "old", time.Minute)
			return err
		}, func(c *Client) error { return c.Set(bg, "k", "new") }, "new", 0, false},
		{"Touch then Set", func(ctx context.Context, c *Client) error { return c.Touch(ctx, "k", time.Second) },
			func(c *Client) error { return c.SetWithTTL(bg, "k", "new", time.Hour) }, "new", 30 * time.Minute, false},
	}
}

// TestWritesKeepOrderUnderDelay: a write whose bytes a proxy delays past
// the Client's deadline (a slow retransmission, a middlebox holding them:
// they reach Redis after the connection was given up) never lands after
// the next write of the same Client, which returned nil. Minimal returns
// the first write's error (ErrOutcomeUnknown); Production absorbs it
// (FailOpen), never resending it. Every process then reads the
// later write: this Client, and another one without L1. Run with and
// without auto-pipelining; with it, other callers keep the stream busy.
func TestWritesKeepOrderUnderDelay(t *testing.T) {
	presets := []struct {
		name string
		opts func() Options
		// callerDL is the delayed write's own deadline (0: the Client's).
		callerDL time.Duration
	}{
		{"Minimal", Minimal, 150 * time.Millisecond},
		{"Production", Production, 0},
	}
	for _, p := range presets {
		for _, pipelined := range []bool{false, true} {
			for _, tc := range orderCases() {
				name := fmt.Sprintf("%s/pipelined=%v/%s", p.name, pipelined, tc.name)
				t.Run(name, func(t *testing.T) {
					if pipelined && noAutoPipeline {
						t.Skip("auto-pipelining off for this run")
					}
					runOrderCase(t, p.opts(), p.callerDL, pipelined, tc)
				})
			}
		}
	}
}

func runOrderCase(t *testing.T, opts Options, callerDL time.Duration, pipelined bool, tc orderCase) {
	srv := redistest.Start(t)
	proxy := redistest.StartProxy(t, srv.Addr())
	opts.RedisURL = proxy.URL()
	opts.Invalidation, opts.SWR = nil, nil // no tracking connection for the proxy to delay instead
	if opts.Reliability != nil {
		// The other callers' reads time out on the delayed connection; a
		// breaker they open would absorb the next write (FailOpen), which
		// may then be lost: allowed, but it proves nothing about order.
		r := *opts.Reliability
		r.DisableBreaker = true
		opts.Reliability = &r
	}
	opts.DisableAutoPipeline = !pipelined
	c := newClient(t, opts)
	reader := newClient(t, Options{RedisURL: srv.URL()})

	// Every script and both connection pools warm: the delayed request must
	// be the write itself, not a NOSCRIPT no-op or a dial.
	for range 2 {
		mustSet(t, c, "k", "v0")
		if err := tc.delayed(bg, c); err != nil {
			t.Fatal(err)
		}
	}
	mustSet(t, c, "k", "v0")

	stop := make(chan struct{})
	var wg sync.WaitGroup
	if pipelined && !tc.offStream { // other callers: the writes go through the stream
		for i := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; ; j++ {
					select {
					case <-stop:
						return
					default:
					}
					ctx, cancel := context.WithTimeout(bg, time.Second)
					_, _ = Get[string](ctx, c, fmt.Sprintf("other:%d:%d", i, j%8))
					cancel()
				}
			}()
		}
	}
	defer func() { close(stop); wg.Wait() }()

	// The delay starts on whichever connection carries the key next: the
	// delayed write's (on the stream, with its batch).
	proxy.DelayWhen(700*time.Millisecond, []byte("$1\r\nk\r\n"))
	ctx := bg
	if callerDL > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(bg, callerDL)
		defer cancel()
	}
	err := tc.delayed(ctx, c)
	if callerDL > 0 && err == nil {
		t.Fatal("the delayed write returned nil past its caller's deadline")
	}
	if err != nil && !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the delayed write = %v, want an error matching ErrOutcomeUnknown", err)
	}
	degraded := c.ReliabilityStats().Degraded
	if err := tc.next(c); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if c.ReliabilityStats().Degraded != degraded {
		t.Fatal("the next write was absorbed (FailOpen): it may be lost, and the case proves nothing")
	}
	testwait.For(t, 5*time.Second, func() bool { return proxy.Held() == 0 }, "the delayed requests to go")

	for name, r := range map[string]*Client{"the writer": c, "another process": reader} {
		s, err := Get[string](bg, r, "k")
		switch {
		case tc.want == "" && !errors.Is(err, ErrNotFound):
			t.Errorf("%s reads %q, %v after the next write deleted the key: the delayed write landed after it", name, s, err)
		case tc.want != "" && s != tc.want:
			t.Errorf("%s reads %q, %v, want %q: the delayed write landed after the next one", name, s, err, tc.want)
		}
	}
	if tc.minTTL > 0 {
		if left, err := reader.TTL(bg, "k"); err != nil || left < tc.minTTL {
			t.Errorf("the key has %v, %v left, want at least %v: the delayed Touch landed after the Set", left, err, tc.minTTL)
		}
	}
	if st := c.Stats(); st.Unfenced != 0 {
		t.Fatalf("Stats.Unfenced = %d against a server that allows CLIENT KILL", st.Unfenced)
	}
}
