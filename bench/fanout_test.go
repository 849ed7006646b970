package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// TestFanout measures what broadcast tracking (CLIENT TRACKING BCAST
// PREFIX, one connection per Client) costs as the fleet grows: N Clients
// in this process (each its own L1 and tracking connection) read K keys
// while one writer Client (no L1) writes W keys per second, for the
// duration in CACHEKIT_FANOUT (a Go duration, e.g. 10s; unset: skipped).
// Writes are uniform over the keys; reads, 200/s per Client, go to a hot
// set of the first 100 keys. Each row reports the writes/s achieved, the
// invalidation messages and keys each Client received per second, Redis's
// CPU (INFO CPU, user+sys) as a share of one core, this process's CPU
// (writer, readers and listeners together) per message received, and the
// readers' L1 hit ratio.
func TestFanout(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CACHEKIT_FANOUT"))
	if err != nil || d <= 0 {
		t.Skip("set CACHEKIT_FANOUT=10s to run the fan-out measurement")
	}
	rdb := rawRedis(t)
	const keys = 10_000
	t.Logf("%-4s %-7s %9s %10s %10s %12s %13s %7s", "N", "W/s", "achieved", "msgs/s/cl", "keys/s/cl", "redis CPU", "proc CPU/msg", "L1 hit")
	for _, n := range []int{1, 8, 32} {
		for _, w := range []int{1_000, 10_000} {
			prefix := benchKey(t, fmt.Sprintf("fan%d-%d", n, w)) + ":"
			opts := cachekit.Options{RedisURL: redisURL(t), KeyPrefix: prefix, DefaultTTL: time.Hour,
				Invalidation: &cachekit.Invalidation{}}
			writer := fanClient(t, opts)
			for i := range keys {
				if err := writer.Set(bg, strconv.Itoa(i), "v"); err != nil {
					t.Fatal(err)
				}
			}
			opts.L1MaxBytes = 64 << 20
			readers := make([]*cachekit.Client, n)
			for i := range readers {
				readers[i] = fanClient(t, opts)
			}
			cpu0, proc0 := redisCPU(t, rdb), procCPU()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var written int
			wg.Go(func() { written = fanWrite(writer, w, keys, stop) })
			for _, c := range readers {
				wg.Go(func() { fanRead(c, keys, stop) })
			}
			time.Sleep(d)
			close(stop)
			wg.Wait()
			cpu1, proc1 := redisCPU(t, rdb), procCPU()
			var msgs, applied, hits, misses uint64
			for _, c := range readers {
				is, st := c.InvalidationStats(), c.Stats()
				msgs, applied = msgs+is.Received, applied+is.Applied
				hits, misses = hits+st.L1Hits, misses+st.L1Misses
				_ = c.Close()
			}
			_ = writer.Close()
			secs := d.Seconds()
			perMsg := time.Duration(0)
			if msgs > 0 {
				perMsg = (proc1 - proc0) / time.Duration(msgs)
			}
			t.Logf("%-4d %-7d %9.0f %10.0f %10.0f %11.1f%% %13v %7.3f", n, w, float64(written)/secs, float64(msgs)/secs/float64(n),
				float64(applied)/secs/float64(n), 100*(cpu1-cpu0)/secs, perMsg, float64(hits)/float64(max(hits+misses, 1)))
		}
	}
}

// fanClient is a Client for TestFanout, closed with t.
func fanClient(t *testing.T, opts cachekit.Options) *cachekit.Client {
	t.Helper()
	c, err := cachekit.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// fanWrite writes w random keys per second, in batches every 10 ms, until
// stop is closed, and returns how many it wrote.
func fanWrite(c *cachekit.Client, w, keys int, stop <-chan struct{}) (n int) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return n
		case <-tick.C:
		}
		for range w / 100 {
			if c.Set(bg, strconv.Itoa(rand.IntN(keys)), "v") == nil {
				n++
			}
		}
	}
}

// fanRead reads random keys of the hot set, 200 a second, until stop is
// closed.
func fanRead(c *cachekit.Client, keys int, stop <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		_, _ = cachekit.Get[string](bg, c, strconv.Itoa(rand.IntN(min(keys, 100))))
	}
}

// redisCPU returns Redis's used CPU (user + sys) in seconds.
func redisCPU(t *testing.T, rdb *redis.Client) float64 {
	info, err := rdb.Info(bg, "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	return infoSeconds(info, "used_cpu_sys", "used_cpu_user")
}

// procCPU returns this process's CPU time (user + sys).
func procCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// infoSeconds sums the named fields of an INFO section.
func infoSeconds(info string, fields ...string) float64 {
	var sum float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		for _, f := range fields {
			if k == f {
				x, _ := strconv.ParseFloat(v, 64)
				sum += x
			}
		}
	}
	return sum
}
