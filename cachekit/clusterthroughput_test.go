package cachekit

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestClusterThroughput measures a healthy Cluster's throughput through
// the Client (encrypted 1 KiB values, L1 off, auto-pipelining on) from 16
// and 128 callers: Get, and Set, 2 s each, one line per row ("ROW name
// ops/s"). It runs only with CACHEKIT_CLUSTER_ADDRS (the masters,
// comma separated), so that two builds can be paired on one cluster:
//
//	CACHEKIT_CLUSTER_ADDRS=127.0.0.1:30001,... go test ./cachekit/ -run TestClusterThroughput -v
func TestClusterThroughput(t *testing.T) {
	addrs := os.Getenv("CACHEKIT_CLUSTER_ADDRS")
	if addrs == "" {
		t.Skip("CACHEKIT_CLUSTER_ADDRS not set")
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: boundedTimeout, ReadTimeout: boundedTimeout, WriteTimeout: boundedTimeout})
	defer rdb.Close()
	pc := &batchCount{}
	rdb.OnNewNode(func(n *redis.Client) { n.AddHook(pc) })
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig("")})
	val := strings.Repeat("v", 1024)
	const keys = 1024
	for i := range keys {
		mustSet(t, c, fmt.Sprint("tp:", i), val)
	}
	for _, callers := range []int{16, 128} {
		for _, op := range []string{"get", "set"} {
			var n atomic.Int64
			var stop atomic.Bool
			var wg sync.WaitGroup
			for g := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := g; !stop.Load(); i += callers {
						k := fmt.Sprint("tp:", i%keys)
						var err error
						if op == "get" {
							_, err = Get[string](context.Background(), c, k)
						} else {
							err = c.Set(context.Background(), k, val)
						}
						if err == nil {
							n.Add(1)
						}
					}
				}()
			}
			time.Sleep(2 * time.Second)
			stop.Store(true)
			wg.Wait()
			fmt.Printf("ROW %s/%d %.0f batches=%d cmds/batch=%.1f single=%d\n", op, callers, float64(n.Load())/2, pc.batches.Load(), float64(pc.cmds.Load())/float64(max(1, pc.batches.Load())), pc.single.Load())
			pc.batches.Store(0)
			pc.cmds.Store(0)
			pc.single.Store(0)
		}
	}
}

type batchCount struct{ batches, cmds, single atomic.Int64 }

func (h *batchCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *batchCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.single.Add(1); return next(ctx, cmd) }
}
func (h *batchCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.batches.Add(1)
		h.cmds.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}
