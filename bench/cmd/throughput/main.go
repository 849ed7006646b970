// Command throughput measures Redis read and write throughput from N
// concurrent callers (issue 34): 1 KiB GETs with plain go-redis, go-redis's
// AutoPipeliner, rueidis (auto-pipelined by default) and cachekit's
// encrypted Get with L1 off (auto-pipelining on and off), at 1, 16 and 128
// callers; Sets of the same value at 128 callers; a 95/5 read/write mix over
// the same 1,024 keys for each client, cachekit with L1 off and on (L1 with
// Invalidation, so every write reaches it); and, for the server cost of a
// read with L1 on, rueidis's GET beside a GET+PTTL sent together. Each
// round runs every row once for -d, in one order in odd rounds and the
// reverse in even ones; a row's result is the median of its rounds in
// ops/s, with the lowest and highest round as its spread, the Redis CPU
// (INFO used_cpu_user + used_cpu_sys) each operation cost and this
// process's (the clients': getrusage, user + system), medians of the
// rounds. The encrypted Get with L1 off also runs with an OpenTelemetry
// SDK MeterProvider (issue 46); its throughput and client CPU are also
// given relative to the same row without one, paired by round (median and
// spread).
//
//	cd bench && go run ./cmd/throughput -rounds 5 -d 2s
//	cd bench && go run ./cmd/throughput -rows 'mix'   # only rows matching
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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

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
	cpu     []float64 // Redis CPU µs per op, per round
	own     []float64 // this process's CPU µs per op, per round
	vs      string    // a row of the same callers this one is divided by, round by round
}

const keys = 1024 // the rows read keys[i%keys]

// ckPipeline, when set (-ap-batch, -ap-delay), is the AutoPipelineOptions
// of the cachekit clients' go-redis clients.
var ckPipeline *redis.AutoPipelineOptions

func main() {
	rounds := flag.Int("rounds", 3, "alternating rounds")
	d := flag.Duration("d", 2*time.Second, "duration of each row in each round")
	only := flag.String("callers", "1,16,128", "caller counts of the GET and mix rows")
	match := flag.String("rows", "", "run only the rows whose name matches this regexp")
	apBatch := flag.Int("ap-batch", 0, "cachekit clients' AutoPipelineOptions.MaxBatchSize (0: go-redis's default)")
	apDelay := flag.Duration("ap-delay", 0, "cachekit clients' AutoPipelineOptions.MaxFlushDelay (0: none)")
	flag.Parse()
	if *apBatch != 0 || *apDelay != 0 {
		ckPipeline = redis.DefaultAutoPipelineOptions()
		if *apBatch != 0 {
			ckPipeline.MaxBatchSize = *apBatch
		}
		ckPipeline.MaxFlushDelay = *apDelay
	}
	re, err := regexp.Compile(*match)
	if err != nil {
		fmt.Fprintln(os.Stderr, "throughput: -rows:", err)
		os.Exit(2)
	}
	if err := run(*rounds, *d, *only, re); err != nil {
		fmt.Fprintln(os.Stderr, "throughput:", err)
		os.Exit(1)
	}
}

func run(rounds int, d time.Duration, only string, match *regexp.Regexp) error {
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
	// cachekit Clients with L1 off, auto-pipelining off and on, and with
	// L1 (and Invalidation, as Production runs it) and auto-pipelining on.
	// The L1 client has a KeyPrefix of its own, so its broadcast tracking
	// hears only its own keys' writes, not every other row's.
	newCK := func(on bool, l1 int64, mp metric.MeterProvider) (*cachekit.Client, error) {
		o := *opt
		o.AutoPipelineOptions = ckPipeline
		rdb := redis.NewClient(&o)
		prefix := ""
		if l1 > 0 {
			prefix = "l1:"
		}
		c, err := cachekit.New(cachekit.Options{Redis: rdb, DisableAutoPipeline: !on, L1MaxBytes: l1, KeyPrefix: prefix,
			Invalidation:  map[bool]*cachekit.Invalidation{true: {}}[l1 > 0],
			Encryption:    &encryption.Config{MasterKey: bytes.Repeat([]byte{0x42}, 32)},
			MeterProvider: mp})
		if err != nil {
			_ = rdb.Close()
			return nil, err
		}
		return c, nil
	}
	clients := map[bool]*cachekit.Client{}
	for _, on := range []bool{false, true} {
		c, err := newCK(on, 0, nil)
		if err != nil {
			return err
		}
		defer c.Close()
		clients[on] = c
	}
	withL1, err := newCK(true, 64<<20, nil)
	if err != nil {
		return err
	}
	defer withL1.Close()
	// The same Client as clients[true], its keys too, with metrics on: an
	// SDK MeterProvider whose reader is collected once, at the end, as a
	// scrape every few seconds would be.
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(ctx) }()
	metered, err := newCK(true, 0, mp)
	if err != nil {
		return err
	}
	defer metered.Close()
	for i := range keys {
		if err := plain.Set(ctx, name(i), value, 0).Err(); err != nil {
			return err
		}
		for _, c := range []*cachekit.Client{clients[false], withL1} { // the L1-off pair shares its keys; withL1 has its prefix
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
		{metricsRow, func(ctx context.Context, i int) error {
			var v []byte
			return metered.Get(ctx, "ck"+name(i), &v)
		}},
	}
	// mix makes a 95/5 read/write row of read and write: every 20th call
	// writes.
	mix := func(read, write op) op {
		return func(ctx context.Context, i int) error {
			if i%20 == 0 {
				return write(ctx, i)
			}
			return read(ctx, i)
		}
	}
	ckGet := func(c *cachekit.Client) op {
		return func(ctx context.Context, i int) error {
			var v []byte
			return c.Get(ctx, "ck"+name(i), &v)
		}
	}
	ckSet := func(c *cachekit.Client) op {
		return func(ctx context.Context, i int) error { return c.Set(ctx, "ck"+name(i), value) }
	}
	mixRows := []struct {
		name string
		op   op
	}{
		{"mix 95/5 go-redis", mix(getRows[0].op, func(ctx context.Context, i int) error { return plain.Set(ctx, name(i), value, 0).Err() })},
		{"mix 95/5 go-redis AutoPipeline", mix(getRows[1].op, func(ctx context.Context, i int) error { return ap.Set(ctx, name(i), value, 0).Err() })},
		{"mix 95/5 rueidis", mix(getRows[2].op, func(ctx context.Context, i int) error {
			return rue.Do(ctx, rue.B().Set().Key(name(i)).Value(rueidis.BinaryString(value)).Build()).Error()
		})},
		{"mix 95/5 cachekit (enc, L1 off, pipelining on)", mix(ckGet(clients[true]), ckSet(clients[true]))},
		{"mix 95/5 cachekit (enc, L1 on, pipelining on)", mix(ckGet(withL1), ckSet(withL1))},
	}
	var rows []*row
	for _, f := range bytes.Split([]byte(only), []byte(",")) {
		n, err := strconv.Atoi(string(f))
		if err != nil {
			return fmt.Errorf("-callers: %w", err)
		}
		for _, g := range getRows {
			r := &row{name: g.name, callers: n, op: g.op}
			if g.name == metricsRow {
				r.vs = "cachekit Get (enc, L1 off, pipelining on)"
			}
			rows = append(rows, r)
		}
		for _, m := range mixRows {
			rows = append(rows, &row{name: m.name, callers: n, op: m.op})
		}
	}
	// What a read with L1 on asks of Redis (GET and PTTL) against a GET
	// alone, at the load where Redis is the bound.
	rows = append(rows, &row{name: "rueidis GET+PTTL (together)", callers: 128, op: func(ctx context.Context, i int) error {
		for _, r := range rue.DoMulti(ctx, rue.B().Get().Key(name(i)).Build(), rue.B().Pttl().Key(name(i)).Build()) {
			if err := r.Error(); err != nil {
				return err
			}
		}
		return nil
	}})
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
	rows = slices.DeleteFunc(rows, func(r *row) bool { return !match.MatchString(r.name) })

	for r := range rounds {
		order := slices.Clone(rows)
		if r%2 == 1 {
			slices.Reverse(order)
		}
		for _, rw := range order {
			cpu0, err := redisCPU(ctx, plain)
			if err != nil {
				return err
			}
			own0 := processCPU()
			ops, n, err := measure(rw.op, rw.callers, d)
			own1 := processCPU()
			if err != nil {
				return fmt.Errorf("%s at %d: %w", rw.name, rw.callers, err)
			}
			cpu1, err := redisCPU(ctx, plain)
			if err != nil {
				return err
			}
			rw.rounds = append(rw.rounds, ops)
			rw.cpu = append(rw.cpu, (cpu1-cpu0)*1e6/float64(n))
			rw.own = append(rw.own, (own1-own0)*1e6/float64(n))
		}
		fmt.Fprintf(os.Stderr, "round %d of %d done\n", r+1, rounds)
	}
	fmt.Printf("%-48s %7s %12s %25s %16s %17s\n", "row", "callers", "median op/s", "spread (min - max)", "Redis CPU µs/op", "client CPU µs/op")
	for _, rw := range rows {
		s := slices.Sorted(slices.Values(rw.rounds))
		c := slices.Sorted(slices.Values(rw.cpu))
		o := slices.Sorted(slices.Values(rw.own))
		fmt.Printf("%-48s %7d %12.1fk %11.1fk - %.1fk %16.2f %17.2f\n", rw.name, rw.callers, s[len(s)/2]/1e3, s[0]/1e3, s[len(s)-1]/1e3, c[len(c)/2], o[len(o)/2])
	}
	for _, rw := range rows {
		if base := find(rows, rw.vs, rw.callers); base != nil {
			r := make([]float64, len(rw.rounds))
			for i := range r {
				r[i] = rw.rounds[i] / base.rounds[i]
			}
			slices.Sort(r)
			fmt.Printf("%s ÷ %s at %d callers, paired by round: median %.3f (%.3f - %.3f), %d rounds\n",
				rw.name, base.name, rw.callers, r[len(r)/2], r[0], r[len(r)-1], len(r))
			for i := range r {
				r[i] = rw.own[i] - base.own[i]
			}
			slices.Sort(r)
			fmt.Printf("  client CPU per op, paired by round: %+.2f µs (%+.2f - %+.2f)\n", r[len(r)/2], r[0], r[len(r)-1])
		}
	}
	return reader.Collect(ctx, &metricdata.ResourceMetrics{})
}

// metricsRow is the encrypted Get with L1 off and an SDK MeterProvider.
const metricsRow = "cachekit Get (enc, L1 off, pipelining on, metrics)"

// find returns the row called name at callers, nil when there is none.
func find(rows []*row, name string, callers int) *row {
	for _, r := range rows {
		if name != "" && r.name == name && r.callers == callers {
			return r
		}
	}
	return nil
}

// processCPU is the CPU time this process has used, in seconds (user +
// system).
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// redisCPU is the CPU time the Redis server has used, in seconds (INFO
// CPU: used_cpu_user + used_cpu_sys).
func redisCPU(ctx context.Context, rdb *redis.Client) (float64, error) {
	info, err := rdb.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_user" || k == "used_cpu_sys") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			total += f
		}
	}
	return total, nil
}

// measure runs op from callers goroutines for d and returns ops/s and the
// number of ops.
func measure(o op, callers int, d time.Duration) (float64, int64, error) {
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
		return 0, 0, firstErr
	}
	return float64(total.Load()) / time.Since(start).Seconds(), total.Load(), nil
}
