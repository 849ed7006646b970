package bench

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// perKeyReader models a Client in Redis's default (per-key) tracking mode
// as cachekit's read path would see it if it handed its L1 to go-redis
// v9.23's client-side caching: its own go-redis client (RESP3, CLIENT
// TRACKING ON on every pooled connection, no REDIRECT), which keeps the
// GET replies it read (the stored bytes, as cachekit's L1 keeps sealed
// bytes) in its own LocalCache and drops one when Redis's invalidation push
// for the key arrives on the connection that read it, or when that
// connection closes. Redis remembers each key a connection read until it
// sends that one invalidation, so a Client hears only of keys it read since
// its last invalidation. The reads skip cachekit's open and decode of the
// bytes (under a microsecond at 200 reads/s).
type perKeyReader struct {
	prefix string
	rdb    *redis.Client
}

// newPerKeyReader returns a per-key reader of the keys under prefix on the
// shared Redis, closed with t.
func newPerKeyReader(t *testing.T, prefix string) *perKeyReader {
	t.Helper()
	opt, err := redis.ParseURL(redisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	opt.Protocol = 3
	opt.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	opt.ClientSideCacheConfig = &redis.ClientSideCacheConfig{MaxEntries: fanKeys}
	r := &perKeyReader{prefix: prefix, rdb: redis.NewClient(opt)}
	t.Cleanup(r.close)
	if err := r.rdb.Ping(bg).Err(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *perKeyReader) read(key string) { _, _ = r.rdb.Get(bg, r.prefix+key).Bytes() }

// stats counts each key Redis invalidated as one message: in the default
// mode Redis sends one push per key (a multi-key command's keys may share
// one; the writer here writes one key at a time).
func (r *perKeyReader) stats() fanStats {
	inv, st := r.rdb.CSCRefreshStats(), r.rdb.CSCStats()
	return fanStats{msgs: inv.Invalidations, keys: inv.Invalidations, hits: st.Hits, misses: st.Misses}
}

func (r *perKeyReader) close() { _ = r.rdb.Close() }

// TestFanoutTrackingMemory measures what Redis's tracking table costs in
// the per-key mode when Clients read widely: N per-key readers (N = 1, 8,
// 32) each read all K keys once, and the row reports the table's growth
// (INFO tracking_total_keys, tracking_total_items) and used_memory's, per
// key × Client item. Run with TestFanout (CACHEKIT_FANOUT set).
func TestFanoutTrackingMemory(t *testing.T) {
	if os.Getenv("CACHEKIT_FANOUT") == "" {
		t.Skip("set CACHEKIT_FANOUT=10s to run the fan-out measurement")
	}
	rdb := rawRedis(t)
	for _, n := range []int{1, 8, 32} {
		prefix := benchKey(t, fmt.Sprintf("fanmem-%d", n)) + ":"
		pipe := rdb.Pipeline()
		for i := range fanKeys {
			pipe.Set(bg, prefix+strconv.Itoa(i), "v", time.Hour)
		}
		if _, err := pipe.Exec(bg); err != nil {
			t.Fatal(err)
		}
		clients0 := infoInt(t, rdb, "clients", "connected_clients")
		readers := make([]*perKeyReader, n)
		for i := range readers {
			readers[i] = newPerKeyReader(t, prefix)
		}
		tk0, ti0 := infoInt(t, rdb, "stats", "tracking_total_keys"), infoInt(t, rdb, "stats", "tracking_total_items")
		mem0 := infoInt(t, rdb, "memory", "used_memory")
		var wg sync.WaitGroup
		for _, r := range readers {
			wg.Go(func() {
				for i := range fanKeys {
					r.read(strconv.Itoa(i))
				}
			})
		}
		wg.Wait()
		tk := infoInt(t, rdb, "stats", "tracking_total_keys") - tk0
		ti := infoInt(t, rdb, "stats", "tracking_total_items") - ti0
		mem := infoInt(t, rdb, "memory", "used_memory") - mem0
		t.Logf("perkey N=%-3d read %d keys each: tracking_total_keys +%d, tracking_total_items +%d, used_memory +%.0f KiB (%.0f B per item)",
			n, fanKeys, tk, ti, float64(mem)/1024, float64(mem)/float64(max(ti, 1)))
		for _, r := range readers {
			r.close()
		}
		// Redis forgets a closed Client's items only when it invalidates
		// the key (a write, expiry, eviction) or the table overflows.
		for deadline := time.Now().Add(2 * time.Second); infoInt(t, rdb, "clients", "connected_clients") > clients0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		left := infoInt(t, rdb, "stats", "tracking_total_items") - ti0
		fanDrop(t, rdb, prefix)
		t.Logf("perkey N=%-3d items left once the readers closed: %d; after the keys were deleted: %d", n, left,
			infoInt(t, rdb, "stats", "tracking_total_items")-ti0)
	}
}
