package l2

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// DiscardDriverLogs silences go-redis's process-wide internal logger, which
// otherwise writes connection-pool failures to stderr on its own. Programs
// that report Redis failures themselves (a command-line tool with a
// one-line-error contract) call it once at start-up. It affects every
// go-redis client in the process.
func DiscardDriverLogs() { redis.SetLogger(discardLogger{}) }

// RouteDriverLogs sends go-redis's process-wide internal log lines (pool
// dial failures, reconnects) to l at debug level instead of stderr. It
// affects every go-redis client in the process, and replaces any logger set
// before with redis.SetLogger; the last call wins. go-redis's lines name
// addresses and errors, never keys or values.
func RouteDriverLogs(l *slog.Logger) { redis.SetLogger(slogDriver{l}) }

// discardLogger drops go-redis's internal log lines.
type discardLogger struct{}

// Printf implements go-redis's internal logging interface.
func (discardLogger) Printf(context.Context, string, ...any) {}

// slogDriver implements go-redis's internal logging interface on an
// slog.Logger, at debug level.
type slogDriver struct{ l *slog.Logger }

// Printf implements go-redis's internal logging interface.
func (d slogDriver) Printf(ctx context.Context, format string, v ...any) {
	if d.l == nil || !d.l.Enabled(ctx, slog.LevelDebug) {
		return
	}
	d.l.LogAttrs(ctx, slog.LevelDebug, "cachekit: redis driver", slog.String("detail", fmt.Sprintf(format, v...)))
}

// CheckDriver logs, once per call, what in the Store's injected go-redis
// client would let a Redis call outlive the caller's deadline (a warning:
// ContextTimeoutEnabled off) or retry reads under the caller's own retries
// when retries is true (debug: MaxRetries > 0; the Store's writes are
// never resent by go-redis, see once.go). It never changes the client's
// settings, and says nothing about a client type it does not know.
func (s *Store) CheckDriver(log *slog.Logger, retries bool) {
	ctxTimeouts, max, known := s.driverSettings()
	if !known {
		return
	}
	if !ctxTimeouts {
		log.LogAttrs(context.Background(), slog.LevelWarn,
			"cachekit: injected redis client has ContextTimeoutEnabled off: deadlines and Reliability.AttemptTimeout do not bound its calls")
	}
	if max > 0 && retries {
		log.LogAttrs(context.Background(), slog.LevelDebug,
			"cachekit: injected redis client retries reads too (MaxRetries > 0; its writes are marked never to be resent): set MaxRetries -1 for one retry budget",
			slog.Int("max_retries", max))
	}
}
