package l2

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// DiscardDriverLogs silences go-redis's process-wide internal logger, which
// otherwise writes connection-pool failures to stderr on its own. Programs
// that report Redis failures themselves (a command-line tool with a
// one-line-error contract) call it once at start-up. It affects every
// go-redis client in the process.
func DiscardDriverLogs() { redis.SetLogger(discardLogger{}) }

// discardLogger drops go-redis's internal log lines.
type discardLogger struct{}

// Printf implements go-redis's internal logging interface.
func (discardLogger) Printf(context.Context, string, ...any) {}
