package redistest

import "testing"

// StartArgs is Start with more redis-server arguments, for example
// "--enable-debug-command", "yes" for a test that sends DEBUG SLEEP.
func StartArgs(tb testing.TB, args ...string) *Server {
	tb.Helper()
	return startWith(tb, args...)
}
