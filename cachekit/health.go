package cachekit

import (
	"context"
	"log/slog"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/guard"
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
	ctx, cancel := context.WithTimeout(ctx, c.rel.AttemptTimeout())
	defer cancel()
	if err := c.l2.Ping(ctx); err != nil {
		return err
	}
	c.rel.Answered()
	return nil
}

// guardHooks connects the reliability stack to what it needs from the
// Client: its clock, a cluster slot-map refresh after transient failures, a
// PING that bypasses the stack for the breaker's background prober,
// Close's context, the retry metric, a span event for each refused call,
// and a log line and a metric for every breaker transition.
func (c *Client) guardHooks() guard.Hooks {
	h := guard.Hooks{Now: c.now, Transition: c.breakerChanged}
	if c.l2 != nil {
		h.Transient, h.Ping, h.Background = c.l2.RefreshTopology, c.l2.Ping, c.bg
	}
	if c.obs != nil {
		h.Retry = c.obs.Retry
	}
	if c.obs.Tracing() {
		h.Refuse = func(ctx context.Context) { c.obs.Event(ctx, "cachekit.breaker_refused") }
	}
	return h
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
	c.obs.BreakerTransition(ctx, int(to))
}

// checkInjected warns once when an injected go-redis client would let a
// Redis call outlive the caller's deadline or retry under the Client's own
// retries. New never changes an injected client's settings.
func (c *Client) checkInjected() {
	ctxTimeouts, retries, known := c.l2.DriverSettings()
	if !known || c.ownsRedis {
		return
	}
	if !ctxTimeouts {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			"cachekit: injected redis client has ContextTimeoutEnabled off: deadlines and Reliability.AttemptTimeout do not bound its calls")
	}
	if retries > 0 && c.rel.Retries() {
		c.log.LogAttrs(context.Background(), slog.LevelDebug,
			"cachekit: injected redis client retries too (MaxRetries > 0): set MaxRetries -1 for one retry budget",
			slog.Int("max_retries", retries))
	}
}
