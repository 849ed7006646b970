package cachekit

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ping checks that Redis answers, within ctx and the reliability stack's
// AttemptTimeout (200 ms by default, with or without Options.Reliability).
// It is a health check: it is sent even while the circuit breaker is open
// and is never retried, and a PING that succeeds closes an open breaker.
// It returns nil in L1-only mode, ErrClosed after Close, and a
// *BackendError when Redis does not answer.
func (c *Client) Ping(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.l2 == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.attemptTimeout())
	defer cancel()
	if err := c.l2.Ping(ctx); err != nil {
		return err
	}
	if c.rel != nil && c.rel.br != nil {
		c.rel.br.answered()
	}
	return nil
}

// attemptTimeout is the bound of one Redis attempt.
func (c *Client) attemptTimeout() time.Duration {
	if c.rel != nil {
		return c.rel.cfg.AttemptTimeout
	}
	return defaultAttemptTimeout
}

// wireBreaker connects the reliability stack to what it needs from the
// Client: a cluster slot-map refresh after transient failures, a PING that
// bypasses the stack for the breaker's background prober, Close's context,
// and a log line and a metric for every breaker transition.
func (c *Client) wireBreaker() {
	if c.rel == nil || c.l2 == nil {
		return
	}
	c.rel.onTransient = c.l2.RefreshTopology
	if c.rel.br == nil {
		return
	}
	c.rel.ping, c.rel.bg = c.l2.Ping, c.bg
	c.rel.br.onChange = c.breakerChanged
}

// breakerChanged logs a breaker transition once (never rate-limited: each
// one matters) and counts it.
func (c *Client) breakerChanged(from, to BreakerState, openedAt time.Time) {
	ctx := context.Background()
	switch to {
	case BreakerOpen:
		c.log.LogAttrs(ctx, slog.LevelWarn, "cachekit: circuit breaker opened: redis calls fail at once until redis answers again",
			slog.String("from", from.String()))
	case BreakerHalfOpen:
		c.log.LogAttrs(ctx, slog.LevelInfo, "cachekit: circuit breaker half-open: probing redis with callers' calls")
	case BreakerClosed:
		c.log.LogAttrs(ctx, slog.LevelInfo, "cachekit: circuit breaker closed: redis answers again",
			slog.Duration("open_for", c.now().Sub(openedAt)))
	}
	c.met.breakerTransition(ctx, to)
}

// checkInjected warns once when an injected go-redis client would let a
// Redis call outlive the caller's deadline or retry under the Client's own
// retries. New never changes an injected client's settings.
func (c *Client) checkInjected(rdb redis.UniversalClient) {
	var ctxTimeouts bool
	var retries int
	switch r := rdb.(type) {
	case *redis.Client:
		ctxTimeouts, retries = r.Options().ContextTimeoutEnabled, r.Options().MaxRetries
	case *redis.ClusterClient:
		ctxTimeouts, retries = r.Options().ContextTimeoutEnabled, r.Options().MaxRetries
	case *redis.Ring:
		ctxTimeouts, retries = r.Options().ContextTimeoutEnabled, r.Options().MaxRetries
	default:
		return
	}
	if !ctxTimeouts {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			"cachekit: injected redis client has ContextTimeoutEnabled off: deadlines and Reliability.AttemptTimeout do not bound its calls")
	}
	if retries > 0 && c.rel != nil && c.rel.cfg.MaxAttempts > 1 {
		c.log.LogAttrs(context.Background(), slog.LevelDebug,
			"cachekit: injected redis client retries too (MaxRetries > 0): set MaxRetries -1 for one retry budget",
			slog.Int("max_retries", retries))
	}
}

// driverLog is the logger go-redis's process-wide internal log goes to: the
// Logger of the most recently created Client, at debug level.
var (
	driverLog      atomic.Pointer[slog.Logger]
	driverLogSetup sync.Once
)

// routeDriverLogs sends go-redis's internal log lines (pool dial failures,
// reconnects) to l at debug level instead of stderr. go-redis has one
// logger per process: the first New with Redis installs the router (in
// place of any logger set before with redis.SetLogger), and the last
// Client created is the one whose Logger receives the lines;
// redis.SetLogger or DiscardRedisDriverLogs called afterwards takes it back.
func routeDriverLogs(l *slog.Logger) {
	driverLog.Store(l)
	driverLogSetup.Do(func() { redis.SetLogger(slogDriver{}) })
}

// slogDriver implements go-redis's internal logging interface on driverLog.
// go-redis's lines name addresses and errors, never keys or values.
type slogDriver struct{}

// Printf implements go-redis's internal logging interface.
func (slogDriver) Printf(ctx context.Context, format string, v ...any) {
	l := driverLog.Load()
	if l == nil || !l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	l.LogAttrs(ctx, slog.LevelDebug, "cachekit: redis driver", slog.String("detail", fmt.Sprintf(format, v...)))
}
