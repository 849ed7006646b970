package l2

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestBatcherMatchesAutoPipeliner is the batcher's differential test
// against the go-redis AsyncAutoPipeline it replaces on a cluster's
// masters: 8 goroutines each run the same seeded script of windows of 1
// to 6 commands (SET PX, GET, APPEND, INCR, GETRANGE, EXISTS, DEL on keys
// of their own, queued together and then awaited), one copy through a
// batcher that splits its queue into pipelines of at most 3 commands and
// 64 bytes, the other through go-redis's pipeliner, each on a fresh
// redis-server. Every command's reply must be the same.
func TestBatcherMatchesAutoPipeliner(t *testing.T) {
	t.Parallel()
	a := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	b := redis.NewClient(&redis.Options{Addr: redistest.Start(t).Addr()})
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	bat := &batcher{client: a, maxCmds: 3, maxBytes: 64}
	ap, err := b.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	script := func(g int, rng *rand.Rand) [][]redis.Cmder {
		var windows [][]redis.Cmder
		for range 150 {
			var w []redis.Cmder
			for range 1 + rng.IntN(6) {
				k := fmt.Sprint("g", g, ":", rng.IntN(4))
				var c redis.Cmder
				switch rng.IntN(7) {
				case 0:
					c = redis.NewStatusCmd(bg, "set", k, fmt.Sprint(rng.IntN(1000), "-", g), "px", 60000)
				case 1:
					c = redis.NewStringCmd(bg, "get", k)
				case 2:
					c = redis.NewIntCmd(bg, "append", k, "xy")
				case 3:
					c = redis.NewIntCmd(bg, "incr", fmt.Sprint("n", g))
				case 4:
					c = redis.NewStringCmd(bg, "getrange", k, 0, rng.IntN(8))
				case 5:
					c = redis.NewIntCmd(bg, "exists", k)
				default:
					c = redis.NewIntCmd(bg, "del", k)
				}
				w = append(w, c)
			}
			windows = append(windows, w)
		}
		return windows
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			viaBatcher := script(g, rand.New(rand.NewPCG(uint64(g), 1)))
			viaGoRedis := script(g, rand.New(rand.NewPCG(uint64(g), 1)))
			for i := range viaBatcher {
				<-bat.submit(viaBatcher[i]).done
				futs := make([]redis.AutoFuture, len(viaGoRedis[i]))
				for j, c := range viaGoRedis[i] {
					futs[j] = ap.Submit(bg, c)
				}
				for _, f := range futs {
					_ = f.Wait()
				}
				for j := range viaBatcher[i] {
					x, y := viaBatcher[i][j], viaGoRedis[i][j]
					if x.String() != y.String() || fmt.Sprint(x.Err()) != fmt.Sprint(y.Err()) {
						t.Errorf("goroutine %d window %d command %d: batcher %q (%v), go-redis %q (%v)", g, i, j, x.String(), x.Err(), y.String(), y.Err())
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestBatcherBatchesWhileInFlight: commands queued while a batch is in
// flight go together as the next one, and a lone command goes at once
// (no coalescing timer).
func TestBatcherBatchesWhileInFlight(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	hold := redistest.NewHoldBefore("get", "first")
	count := &pipelineCounter{}
	rdb.AddHook(count)
	rdb.AddHook(hold)
	bat := &batcher{client: rdb, maxCmds: 200, maxBytes: 1 << 20}
	first := bat.submit([]redis.Cmder{redis.NewStringCmd(bg, "get", "first")})
	<-hold.Held()
	var dones []*batchDone
	for i := range 10 {
		dones = append(dones, bat.submit([]redis.Cmder{redis.NewStringCmd(bg, "get", fmt.Sprint("k", i))}))
	}
	hold.Release()
	<-first.done
	for _, d := range dones {
		<-d.done
		if d != dones[0] {
			t.Fatal("commands queued behind one batch went in different batches")
		}
	}
	if n := count.pipelines.Load(); n != 1 {
		t.Fatalf("%d pipelines for the 10 queued commands, want 1", n)
	}
	start := time.Now()
	<-bat.submit([]redis.Cmder{redis.NewStringCmd(bg, "get", "alone")}).done
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Fatalf("a lone command took %v", d)
	}
}
