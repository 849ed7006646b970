package cachekit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// syncBuffer is a bytes.Buffer safe for a slog handler and a test reading
// it at the same time.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// openBreaker sends Gets until the breaker opens (Redis must be down).
func openBreaker(t *testing.T, c *Client) {
	t.Helper()
	waitWithin(t, 5*time.Second, func() bool {
		_, _ = Get[string](bg, c, "secret-user-key")
		return c.ReliabilityStats().Breaker == BreakerOpen
	})
}

// TestBreakerClosesOnEvidence: with Redis back, an open breaker closes
// within about a second with no caller traffic at all (the background
// PING), not after BreakerOpenFor; each transition is logged once and
// counted; go-redis's own log lines reach the logger RouteRedisDriverLogs
// was given, at debug level;
// no log line names the key.
func TestBreakerClosesOnEvidence(t *testing.T) {
	// Not parallel: bounds a refusal at 1 ms and the recovery at 1.5 s.
	srv := redistest.Start(t)
	var logs syncBuffer
	reader := sdkmetric.NewManualReader()
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	RouteRedisDriverLogs(logger) // process-wide: this test is not parallel
	t.Cleanup(DiscardRedisDriverLogs)
	c := newClient(t, Options{
		RedisURL:      srv.URL(),
		Reliability:   &Reliability{BreakerOpenFor: time.Hour},
		Logger:        logger,
		MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
	})
	mustSet(t, c, "secret-user-key", "v")
	srv.Stop()
	openBreaker(t, c)
	start := time.Now()
	_, err := Get[string](bg, c, "secret-user-key")
	if d := time.Since(start); !errors.Is(err, ErrCircuitOpen) || d > time.Millisecond {
		t.Fatalf("Get with the breaker open = %v after %v; want ErrCircuitOpen within 1ms", err, d)
	}
	srv.Restart()
	back := time.Now()
	waitWithin(t, 3*time.Second, func() bool { return c.ReliabilityStats().Breaker == BreakerClosed })
	took := time.Since(back)
	t.Logf("breaker closed %v after Redis was back (no caller traffic)", took)
	if took > 1500*time.Millisecond {
		t.Fatalf("breaker closed %v after Redis answered again, want about a second", took)
	}
	if v, err := Get[string](bg, c, "secret-user-key"); err != nil || v != "v" {
		t.Fatalf("Get after recovery = %q, %v", v, err)
	}

	out := logs.String()
	if n := strings.Count(out, "circuit breaker opened"); n != 1 {
		t.Errorf("%d 'opened' log lines, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "circuit breaker closed"); n != 1 {
		t.Errorf("%d 'closed' log lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "cachekit: redis driver") {
		t.Errorf("go-redis's log lines did not reach Options.Logger:\n%s", out)
	}
	if strings.Contains(out, "secret-user-key") {
		t.Errorf("a log line names the key:\n%s", out)
	}
	m := collect(t, reader)
	if m["cachekit.breaker.transitions{to=open}"] != 1 || m["cachekit.breaker.transitions{to=closed}"] != 1 {
		t.Errorf("breaker transition metrics: %v", m)
	}
}

// parkedProberClient is a Client of opts on a private Redis, with a
// breaker that neither reopens to callers nor probes in the background
// for an hour: only Ping or tracking reconnecting can close it.
func parkedProberClient(t *testing.T, opts Options) (*redistest.Server, *Client) {
	t.Helper()
	srv := redistest.Start(t)
	opts.RedisURL = srv.URL()
	opts.Reliability = &Reliability{BreakerOpenFor: time.Hour, BreakerProbeInterval: time.Hour}
	return srv, newClient(t, opts)
}

// TestPingIsAHealthCheck: Ping reaches Redis even with the breaker open,
// and its success closes the breaker; it is nil in L1-only mode and
// ErrClosed after Close.
func TestPingIsAHealthCheck(t *testing.T) {
	t.Parallel()
	srv, c := parkedProberClient(t, Options{})
	if err := c.Ping(bg); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	var be *BackendError
	if err := c.Ping(bg); !errors.As(err, &be) {
		t.Fatalf("Ping with Redis down = %v, want *BackendError", err)
	}
	openBreaker(t, c)
	srv.Restart()
	if st := c.ReliabilityStats().Breaker; st != BreakerOpen {
		t.Fatalf("breaker %v before Ping (the prober is parked for an hour)", st)
	}
	if err := c.Ping(bg); err != nil {
		t.Fatalf("Ping with Redis back = %v", err)
	}
	if st := c.ReliabilityStats().Breaker; st != BreakerClosed {
		t.Fatalf("breaker %v after a successful Ping, want closed", st)
	}
	local := newClient(t, Options{L1MaxBytes: 1 << 20})
	if err := local.Ping(bg); err != nil {
		t.Fatalf("L1-only Ping = %v, want nil", err)
	}
	_ = c.Close()
	if err := c.Ping(bg); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close = %v, want ErrClosed", err)
	}
}

// TestTrackingReconnectClosesBreaker: with the background PING parked,
// tracking reconnecting alone is evidence enough to close the breaker.
func TestTrackingReconnectClosesBreaker(t *testing.T) {
	t.Parallel()
	srv, c := parkedProberClient(t, Options{L1MaxBytes: 1 << 20, Invalidation: &Invalidation{}})
	waitWithin(t, 3*time.Second, func() bool { return c.InvalidationStats().Tracking })
	srv.Stop()
	openBreaker(t, c)
	srv.Restart()
	waitWithin(t, 5*time.Second, func() bool { return c.ReliabilityStats().Breaker == BreakerClosed })
}

// TestCallerDeadlineDoesNotOpenBreaker: a caller whose own short deadline
// expires against a slow Redis has given up; that says nothing about Redis
// and must not open the breaker.
func TestCallerDeadlineDoesNotOpenBreaker(t *testing.T) {
	t.Parallel()
	srv := redistest.StartArgs(t, "--enable-debug-command", "yes")
	c := newClient(t, Options{RedisURL: srv.URL(), Reliability: &Reliability{BreakerThreshold: 1, MaxAttempts: 1}})
	done := make(chan struct{})
	go func() { defer close(done); _, _ = redistest.Do(srv.Addr(), "DEBUG", "SLEEP", "1") }()
	waitWithin(t, time.Second, func() bool {
		ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
		defer cancel()
		return c.Ping(ctx) != nil // the server is asleep
	})
	for range 20 {
		ctx, cancel := context.WithTimeout(bg, 30*time.Millisecond)
		_, err := Get[string](ctx, c, "k")
		cancel()
		if err == nil {
			t.Fatal("Get succeeded against a sleeping Redis")
		}
	}
	if st := c.ReliabilityStats(); st.BreakerOpened != 0 {
		t.Fatalf("callers' own deadlines opened the breaker %d times", st.BreakerOpened)
	}
	<-done
}
