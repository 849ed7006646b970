package cachekit

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestFailedWriteNeverLeavesOldL1: a Set whose reply is lost after Redis
// applied it (the connection is reset mid-reply) fails or is absorbed, and
// Redis may hold the new value: L1 must not keep serving the old one. Both
// with the error returned (no reliability stack) and absorbed (FailOpen),
// and with no invalidation to clear L1 for it.
func TestFailedWriteNeverLeavesOldL1(t *testing.T) {
	t.Parallel()
	for name, rel := range map[string]*Reliability{"returned": nil, "absorbed": {FailOpen: true}} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			proxy := redistest.StartProxy(t, srv.Addr())
			raw := redis.NewClient(&redis.Options{Addr: srv.Addr()})
			t.Cleanup(func() { _ = raw.Close() })
			c := newClient(t, Options{RedisURL: proxy.URL(), L1MaxBytes: 1 << 20, Reliability: rel})
			mustSet(t, c, "k", "old")
			fillL1(t, c, "k", "old")
			before, _ := raw.Get(bg, "k").Result()
			proxy.ResetMidReply()
			_ = c.Set(bg, "k", "new") // Redis applies it; the reply never arrives whole
			proxy.Pass()
			if after, _ := raw.Get(bg, "k").Result(); after == before {
				t.Fatal("the SET did not reach Redis; the test needs it applied")
			}
			if got, err := Get[string](bg, c, "k"); err == nil && got == "old" {
				t.Fatal("L1 still serves the old value after a write whose outcome is unknown")
			}
		})
	}
}
