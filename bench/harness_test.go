package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/bench/internal/redisserver"
	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

var bg = context.Background()

// srv is the Redis every Redis-backed workload shares (nil when none could
// be had: those workloads skip).
var srv *redisserver.Server

// keySeq makes every workload's keys unique within a run, so workloads
// sharing one Redis never read each other's entries.
var keySeq atomic.Uint64

func TestMain(m *testing.M) {
	if spec := os.Getenv(nemesisChildEnv); spec != "" {
		os.Exit(nemesisChild(spec)) // a client of a nemesis run in another process
	}
	flag.Parse()
	needRedis := !testing.Short()
	if needRedis {
		var err error
		if srv, err = redisserver.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "bench: no redis, Redis workloads will skip:", err)
		}
	}
	code := m.Run()
	if srv != nil {
		srv.Stop()
	}
	os.Exit(code)
}

// benchKey returns a key unique to this run.
func benchKey(tb testing.TB, what string) string {
	return "ckbench:" + strconv.FormatInt(int64(os.Getpid()), 10) + ":" + what + ":" + strconv.FormatUint(keySeq.Add(1), 10)
}

// redisURL returns the shared Redis URL, skipping tb when there is none.
func redisURL(tb testing.TB) string {
	tb.Helper()
	if srv == nil {
		tb.Skip("bench: no Redis (set CACHEKIT_REDIS_URL or install redis-server)")
	}
	return srv.URL()
}

// rawRedis returns a go-redis client on the shared Redis, closed with tb.
func rawRedis(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(redisURL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(bg).Err(); err != nil {
		tb.Fatal(err)
	}
	return c
}

// clientConfig names the client setups the workloads use.
type clientConfig struct {
	encrypted bool
	l1        bool
	redis     bool
}

// newClient builds a cachekit Client for cfg, closed with tb. Encryption
// keys are derived before it is returned, so no workload measures the
// first derivation.
func newClient(tb testing.TB, cfg clientConfig) *cachekit.Client {
	tb.Helper()
	opts := cachekit.Options{DefaultTTL: time.Hour}
	if cfg.l1 {
		opts.L1MaxBytes = 64 << 20
	}
	if cfg.encrypted {
		opts.Encryption = &encryption.Config{MasterKey: fixture.MasterKey}
	}
	if cfg.redis {
		opts.RedisURL = redisURL(tb)
	}
	c, err := cachekit.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	if err := c.Warm(bg); err != nil {
		tb.Fatal(err)
	}
	return c
}

// modeName is the row segment for encryption on or off.
func modeName(encrypted bool) string {
	if encrypted {
		return "encrypted"
	}
	return "plain"
}
