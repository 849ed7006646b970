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

// fanKeys is K, the keys the writer writes; the readers read the first
// fanHot of them.
const (
	fanKeys = 10_000
	fanHot  = 100
)

// fanMode is a way for a Client to hear of writes.
type fanMode string

const (
	// fanBcast is cachekit's Invalidation: CLIENT TRACKING ON BCAST PREFIX
	// on one connection per Client; every write under the prefix reaches
	// every Client.
	fanBcast fanMode = "bcast"
	// fanPerKey is Redis's default tracking mode through go-redis's own
	// client-side caching (RESP3, CLIENT TRACKING ON on every pooled
	// connection): Redis tells a Client only of keys it read, once per read.
	fanPerKey fanMode = "perkey"
)

// fanRow is one measured row.
type fanRow struct {
	mode         fanMode
	n, w         int
	written      float64 // writes/s achieved
	msgs, keys   float64 // invalidation messages and keys per Client per second
	redisCPU     float64 // share of one core
	procCPU      float64 // this process, cores
	perMsg       time.Duration
	hit          float64
	trackedKeys  int64 // tracking_total_keys added while the readers ran
	trackedItems int64 // tracking_total_items (key × client pairs) added
	memDelta     int64 // used_memory at the end minus before the readers, bytes
}

// TestFanout measures what an invalidation mechanism costs as the fleet
// grows, for broadcast tracking (what cachekit does) and Redis's default
// per-key tracking (go-redis v9.23's client-side caching, which cachekit
// does not use): N Clients in this process (each its own L1 and
// connections) read K keys while one writer Client (cachekit, no L1)
// writes W keys per second, for the duration in CACHEKIT_FANOUT (a Go
// duration, e.g. 10s; unset: skipped). Writes are uniform over the keys;
// reads, 200/s per Client, go to a hot set of the first 100 keys. Every
// configuration runs CACHEKIT_FANOUT_ROUNDS times (default 2), the two
// modes alternating which goes first. Each row reports the writes/s
// achieved, the invalidation messages and keys each Client received per
// second, Redis's CPU (INFO CPU, user+sys) as a share of one core, this
// process's CPU (writer, readers and listeners together) in cores and per
// message received, the readers' L1 hit ratio, and Redis's tracking table
// (INFO tracking_total_keys, tracking_total_items) and used_memory growth
// while the readers ran.
func TestFanout(t *testing.T) {
	d, err := time.ParseDuration(os.Getenv("CACHEKIT_FANOUT"))
	if err != nil || d <= 0 {
		t.Skip("set CACHEKIT_FANOUT=10s to run the fan-out measurement")
	}
	rounds := 2
	if s := os.Getenv("CACHEKIT_FANOUT_ROUNDS"); s != "" {
		if rounds, err = strconv.Atoi(s); err != nil || rounds < 1 {
			t.Fatalf("CACHEKIT_FANOUT_ROUNDS=%q: want a positive integer", s)
		}
	}
	rdb := rawRedis(t)
	var rows []fanRow
	for r := range rounds {
		for _, n := range []int{1, 8, 32} {
			for _, w := range []int{1_000, 10_000} {
				modes := []fanMode{fanBcast, fanPerKey}
				if (r+n+w/1000)%2 == 1 {
					modes[0], modes[1] = modes[1], modes[0]
				}
				for _, m := range modes {
					row := fanRun(t, rdb, m, n, w, d)
					t.Log(row)
					rows = append(rows, row)
				}
			}
		}
	}
	t.Log("mode   N    W/s     achieved  msgs/s/cl  keys/s/cl  redis CPU  proc CPU  proc CPU/msg  L1 hit  tracked keys/items  Δused_memory")
	for _, m := range []fanMode{fanBcast, fanPerKey} {
		for _, row := range rows {
			if row.mode == m {
				t.Log(row)
			}
		}
	}
}

// String is the row as TestFanout logs it.
func (r fanRow) String() string {
	return fmt.Sprintf("%-6s %-4d %-7d %9.0f %10.1f %10.1f %9.1f%% %8.3f %13v %7.3f %9d/%-8d %9.0f KiB",
		r.mode, r.n, r.w, r.written, r.msgs, r.keys, 100*r.redisCPU, r.procCPU, r.perMsg, r.hit,
		r.trackedKeys, r.trackedItems, float64(r.memDelta)/1024)
}

// fanRun measures one row: n readers of mode m, one writer at w writes/s,
// for d.
func fanRun(t *testing.T, rdb *redis.Client, m fanMode, n, w int, d time.Duration) fanRow {
	prefix := benchKey(t, fmt.Sprintf("fan-%s-%d-%d", m, n, w)) + ":"
	opts := cachekit.Options{RedisURL: redisURL(t), KeyPrefix: prefix, DefaultTTL: time.Hour,
		Invalidation: &cachekit.Invalidation{}}
	writer := fanClient(t, opts)
	for i := range fanKeys {
		if err := writer.Set(bg, strconv.Itoa(i), "v"); err != nil {
			t.Fatal(err)
		}
	}
	readers := make([]fanReader, n)
	for i := range readers {
		if m == fanBcast {
			o := opts
			o.L1MaxBytes = 64 << 20
			readers[i] = bcastReader{fanClient(t, o)}
		} else {
			readers[i] = newPerKeyReader(t, prefix)
		}
	}
	tk0, ti0 := infoInt(t, rdb, "stats", "tracking_total_keys"), infoInt(t, rdb, "stats", "tracking_total_items")
	mem0 := infoInt(t, rdb, "memory", "used_memory")
	cpu0, proc0 := redisCPU(t, rdb), procCPU()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var written int
	wg.Go(func() { written = fanWrite(writer, w, stop) })
	for _, c := range readers {
		wg.Go(func() { fanRead(c, stop) })
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	cpu1, proc1 := redisCPU(t, rdb), procCPU()
	row := fanRow{mode: m, n: n, w: w,
		trackedKeys:  infoInt(t, rdb, "stats", "tracking_total_keys") - tk0,
		trackedItems: infoInt(t, rdb, "stats", "tracking_total_items") - ti0,
		memDelta:     infoInt(t, rdb, "memory", "used_memory") - mem0}
	var msgs, keys, hits, misses uint64
	for _, c := range readers {
		s := c.stats()
		msgs, keys, hits, misses = msgs+s.msgs, keys+s.keys, hits+s.hits, misses+s.misses
		c.close()
	}
	_ = writer.Close()
	fanDrop(t, rdb, prefix)
	secs := d.Seconds()
	row.written = float64(written) / secs
	row.msgs, row.keys = float64(msgs)/secs/float64(n), float64(keys)/secs/float64(n)
	row.redisCPU = (cpu1 - cpu0) / secs
	row.procCPU = (proc1 - proc0).Seconds() / secs
	if msgs > 0 {
		row.perMsg = (proc1 - proc0) / time.Duration(msgs)
	}
	row.hit = float64(hits) / float64(max(hits+misses, 1))
	return row
}

// fanDrop deletes a row's keys, which also empties Redis's tracking table
// of them (Redis forgets a key's readers when it invalidates it), so the
// next row starts from the same table and memory.
func fanDrop(t *testing.T, rdb *redis.Client, prefix string) {
	keys := make([]string, 0, 1000)
	for i := range fanKeys {
		if keys = append(keys, prefix+strconv.Itoa(i)); len(keys) == cap(keys) || i == fanKeys-1 {
			if err := rdb.Unlink(bg, keys...).Err(); err != nil {
				t.Fatal(err)
			}
			keys = keys[:0]
		}
	}
}

// fanReader is one reading Client of a row.
type fanReader interface {
	read(key string)
	stats() fanStats
	close()
}

// fanStats is what a reader heard and hit.
type fanStats struct {
	msgs, keys, hits, misses uint64
}

// bcastReader is a cachekit Client with L1 and broadcast tracking.
type bcastReader struct{ c *cachekit.Client }

func (r bcastReader) read(key string) { _, _ = cachekit.Get[string](bg, r.c, key) }

func (r bcastReader) stats() fanStats {
	is, st := r.c.InvalidationStats(), r.c.Stats()
	return fanStats{msgs: is.Received, keys: is.Applied, hits: st.L1Hits, misses: st.L1Misses}
}

func (r bcastReader) close() { _ = r.c.Close() }

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
func fanWrite(c *cachekit.Client, w int, stop <-chan struct{}) (n int) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return n
		case <-tick.C:
		}
		for range w / 100 {
			if c.Set(bg, strconv.Itoa(rand.IntN(fanKeys)), "v") == nil {
				n++
			}
		}
	}
}

// fanRead reads random keys of the hot set, 200 a second, until stop is
// closed.
func fanRead(r fanReader, stop <-chan struct{}) {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		r.read(strconv.Itoa(rand.IntN(fanHot)))
	}
}

// redisCPU returns Redis's used CPU (user + sys) in seconds.
func redisCPU(t *testing.T, rdb *redis.Client) float64 {
	info, err := rdb.Info(bg, "cpu").Result()
	if err != nil {
		t.Fatal(err)
	}
	return infoSum(info, "used_cpu_sys", "used_cpu_user")
}

// infoInt returns one integer field of an INFO section.
func infoInt(t *testing.T, rdb *redis.Client, section, field string) int64 {
	info, err := rdb.Info(bg, section).Result()
	if err != nil {
		t.Fatal(err)
	}
	return int64(infoSum(info, field))
}

// procCPU returns this process's CPU time (user + sys).
func procCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// infoSum sums the named fields of an INFO section.
func infoSum(info string, fields ...string) float64 {
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
