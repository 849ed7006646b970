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
