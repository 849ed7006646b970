// Command throughput measures Redis read and write throughput from N
// concurrent callers (issue 34): 1 KiB GETs with plain go-redis, go-redis's
// AutoPipeliner, rueidis (auto-pipelined by default) and cachekit's
// encrypted Get with L1 off (auto-pipelining on and off), at 1, 16 and 128
// callers; and Sets of the same value at 128 callers. Each round runs
// every row once for -d, in one order in odd rounds and the reverse in even
// ones; a row's result is the median of its rounds in ops/s, with the
// lowest and highest round as its spread.
//
//	cd bench && go run ./cmd/throughput -rounds 5 -d 2s
//
// It uses the Redis of CACHEKIT_REDIS_URL or starts a private redis-server
// (bench/internal/redisserver).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/cachekit-io/cachekit-go/bench/internal/redisserver"
	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// op is one call of a row; i numbers the caller's calls.
type op func(ctx context.Context, i int) error

// row is one line of the table.
type row struct {
	name    string
	callers int
	op      op
	rounds  []float64 // ops/s per round
}

const keys = 1024 // the rows read keys[i%keys]

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	d := flag.Duration("d", 2*time.Second, "duration of each row in each round")
	only := flag.String("callers", "1,16,128", "caller counts of the GET rows")
	flag.Parse()
	if err := run(*rounds, *d, *only); err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}

func run(rounds int, d time.Duration, only string) error {
	srv, err := redisserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	opt, err := redis.ParseURL(srv.URL())
	if err != nil {
		return err
	}
	opt.ContextTimeoutEnabled = true // as a service honouring its callers' deadlines runs it
	ctx := context.Background()
	value := bytes.Repeat([]byte{'v'}, 1024)
	name := func(i int) string { return "tp:" + strconv.Itoa(i%keys) }

	plain := redis.NewClient(opt)
	defer plain.Close()
	ap, err := plain.AutoPipeline()
	if err != nil {
		return err
	}
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{opt.Addr}, DisableCache: true})
	if err != nil {
		return err
	}
	defer rue.Close()
	clients := map[bool]*cachekit.Client{}
	for _, on := range []bool{false, true} {
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		c, err := cachekit.New(cachekit.Options{Redis: rdb, AutoPipeline: on,
			Encryption: &encryption.Config{MasterKey: bytes.Repeat([]byte{0x42}, 32)}})
		if err != nil {
			return err
		}
		defer c.Close()
		clients[on] = c
	}
	for i := range keys {
		if err := plain.Set(ctx, name(i), value, 0).Err(); err != nil {
			return err
		}
		for _, c := range clients {
			if err := c.Set(ctx, "ck"+name(i), value); err != nil {
				return err
			}
		}
	}

	getRows := []struct {
		name string
		op   op
	}{
		{"go-redis GET", func(ctx context.Context, i int) error { return plain.Get(ctx, name(i)).Err() }},
		{"go-redis AutoPipeline GET", func(ctx context.Context, i int) error { return ap.Get(ctx, name(i)).Err() }},
		{"rueidis GET", func(ctx context.Context, i int) error {
			return rue.Do(ctx, rue.B().Get().Key(name(i)).Build()).Error()
		}},
		{"cachekit Get (enc, L1 off, pipelining off)", func(ctx context.Context, i int) error {
			var v []byte
			return clients[false].Get(ctx, "ck"+name(i), &v)
		}},
		{"cachekit Get (enc, L1 off, pipelining on)", func(ctx context.Context, i int) error {
			var v []byte
			return clients[true].Get(ctx, "ck"+name(i), &v)
		}},
	}
	var rows []*row
	for _, f := range bytes.Split([]byte(only), []byte(",")) {
		n, err := strconv.Atoi(string(f))
		if err != nil {
			return fmt.Errorf("-callers: %w", err)
		}
		for _, g := range getRows {
			rows = append(rows, &row{name: g.name, callers: n, op: g.op})
		}
	}
	setRows := []struct {
		name string
		op   op
	}{
		{"go-redis SET", func(ctx context.Context, i int) error { return plain.Set(ctx, name(i), value, 0).Err() }},
		{"go-redis AutoPipeline SET", func(ctx context.Context, i int) error { return ap.Set(ctx, name(i), value, 0).Err() }},
		{"rueidis SET", func(ctx context.Context, i int) error {
			return rue.Do(ctx, rue.B().Set().Key(name(i)).Value(rueidis.BinaryString(value)).Build()).Error()
		}},
		{"cachekit Set (enc, pipelining off)", func(ctx context.Context, i int) error {
			return clients[false].Set(ctx, "ck"+name(i), value)
		}},
		{"cachekit Set (enc, pipelining on)", func(ctx context.Context, i int) error {
			return clients[true].Set(ctx, "ck"+name(i), value)
		}},
	}
	for _, s := range setRows {
		rows = append(rows, &row{name: s.name, callers: 128, op: s.op})
	}

	for r := range rounds {
		order := slices.Clone(rows)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, rw := range order {
			ops, err := measure(rw.op, rw.callers, d)
			if err != nil {
				return fmt.Errorf("%s at %d: %w", rw.name, rw.callers, err)
			}
			rw.rounds = append(rw.rounds, ops)
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", r+1, rounds)
	}
	fmt.Printf("%-44s %7s %12s %25s\n", "row", "callers", "median op/s", "spread (min - max)")
	for _, rw := range rows {
		s := slices.Sorted(slices.Values(rw.rounds))
		fmt.Printf("%-44s %7d %12.1fk %11.1fk - %.1fk\n", rw.name, rw.callers, s[len(s)/2]/1e3, s[0]/1e3, s[len(s)-1]/1e3)
	}
	return nil
}

// measure runs op from callers goroutines for d and returns ops/s.
func measure(o op, callers int, d time.Duration) (float64, error) {
	ctx := context.Background()
	var total atomic.Int64
	var mu sync.Mutex
	var firstErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for g := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := 0
			for i := g * 7919; ; i++ {
				select {
				case <-stop:
					total.Add(int64(n))
					return
				default:
				}
				if err := o(ctx, i); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
				n++
			}
		}()
	}
	time.Sleep(d)
	close(stop)
	wg.Wait()
	if firstErr != nil {
		return 0, firstErr
	}
	return float64(total.Load()) / time.Since(start).Seconds(), nil
}
