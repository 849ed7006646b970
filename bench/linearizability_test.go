package bench

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/cache/v9"
	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/nemesis"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

var (
	asideHistories = flag.Int("aside.histories", 1000, "cache-aside histories per row of TestCacheAsideVerdicts")
	asidePace      = flag.Duration("aside.pace", 5*time.Millisecond, "interval between two operations of a goroutine in TestCacheAsideVerdicts")
)

// asideCachekit adapts a cachekit Client to cacheaside.Cache.
type asideCachekit struct{ c *cachekit.Client }

func (a asideCachekit) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	return cachekit.GetOrLoad(ctx, a.c, key, load)
}
func (a asideCachekit) Set(ctx context.Context, key string, v int) error { return a.c.Set(ctx, key, v) }
func (a asideCachekit) Delete(ctx context.Context, key string) error     { return a.c.Delete(ctx, key) }

// asideGoRedisCache adapts go-redis/cache (its Once is its GetOrLoad).
type asideGoRedisCache struct{ c *cache.Cache }

func (a asideGoRedisCache) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	var v int
	err := a.c.Once(&cache.Item{Ctx: ctx, Key: key, Value: &v, TTL: time.Minute, Do: func(it *cache.Item) (any, error) {
		return load(it.Context())
	}})
	return v, err
}
func (a asideGoRedisCache) Set(ctx context.Context, key string, v int) error {
	return a.c.Set(&cache.Item{Ctx: ctx, Key: key, Value: v, TTL: time.Minute})
}
func (a asideGoRedisCache) Delete(ctx context.Context, key string) error {
	err := a.c.Delete(ctx, key)
	if err == cache.ErrCacheMiss {
		return nil
	}
	return err
}

// TestCacheAsideVerdicts runs the porcupine cache-aside check of
// internal/cacheaside (3 clients, writers that update a source then Set,
// Delete or raw DEL, readers that GetOrLoad; -aside.histories histories
// per row) for cachekit and for go-redis/cache, and logs each row's
// verdict. It fails only when a cachekit row is not linearizable (within
// its delta); the peers' rows are what they are. Skipped under -short (CI
// runs the 100-history check in go test ./cachekit).
func TestCacheAsideVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("the long cache-aside check runs without -short")
	}
	raw := rawRedis(t)
	foreign := func(ctx context.Context, key string) error { return raw.Del(ctx, key).Err() }
	ck := func(l1 bool) []cacheaside.Cache {
		var out []cacheaside.Cache
		for range 3 {
			o := cachekit.Options{RedisURL: redisURL(t), Encryption: &encryption.Config{MasterKey: fixture.MasterKey}, FleetSingleFlight: true}
			if l1 {
				o.L1MaxBytes, o.Invalidation = 1<<20, &cachekit.Invalidation{}
			}
			c, err := cachekit.New(o)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			out = append(out, asideCachekit{c})
		}
		return out
	}
	grc := func(local bool) []cacheaside.Cache {
		var out []cacheaside.Cache
		for range 3 {
			rdb := redis.NewClient(&redis.Options{Addr: raw.Options().Addr})
			t.Cleanup(func() { _ = rdb.Close() })
			o := &cache.Options{Redis: rdb}
			if local {
				o.LocalCache = cache.NewTinyLFU(1000, time.Minute)
			}
			out = append(out, asideGoRedisCache{cache.New(o)})
		}
		return out
	}
	rows := []struct {
		name    string
		clients []cacheaside.Cache
		delta   time.Duration
		ours    bool
	}{
		{"cachekit/noL1/strict", ck(false), 0, true},
		{"cachekit/L1+invalidation/strict", ck(true), 0, false},
		{"cachekit/L1+invalidation/delta=5ms", ck(true), 5 * time.Millisecond, false},
		{"cachekit/L1+invalidation/delta=20ms", ck(true), 20 * time.Millisecond, true},
		{"go-redis-cache/noLocal/strict", grc(false), 0, false},
		{"go-redis-cache/noLocal/delta=20ms", grc(false), 20 * time.Millisecond, false},
		{"go-redis-cache/TinyLFU/strict", grc(true), 0, false},
		{"go-redis-cache/TinyLFU/delta=20ms", grc(true), 20 * time.Millisecond, false},
	}
	for i, row := range rows {
		start := time.Now()
		res, err := cacheaside.Run(bg, cacheaside.Config{Clients: row.clients, Foreign: foreign, Delta: row.delta, Pace: *asidePace, Seed: uint64(i + 1)}, *asideHistories)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-40s %5d histories %7d ops %6.1fs: %4d not linearizable, %d undecided, %d errors",
			row.name, res.Histories, res.Operations, time.Since(start).Seconds(), res.Failed, res.Unknown, res.Errors)
		if row.ours && (res.Failed != 0 || res.Unknown != 0 || res.Errors != 0) {
			t.Errorf("%s: not linearizable within its delta", row.name)
		}
	}
}

var (
	nemesisHistories = flag.Int("nemesis.histories", 1000, "histories per row and fault kind of TestNemesisVerdicts")
	nemesisMinFaults = flag.Int("nemesis.faults", 50, "the least faults per row and fault kind (a row runs more histories until then)")
	nemesisKinds     = flag.String("nemesis.kinds", "", "fault kinds of TestNemesisVerdicts, comma separated (default: every kind, then mixed)")
	nemesisRows      = flag.String("nemesis.rows", "", "rows of TestNemesisVerdicts, comma separated: cachekit-noL1, cachekit-L1, go-redis-cache (default: all)")
	nemesisArtifacts = flag.String("nemesis.artifacts", "results/nemesis", "directory for the failing histories' visualisations and the verdict table")
)

// nemesisChildEnv makes the bench test binary serve one client of a
// nemesis run (nemesis.Serve): "<impl> <mode> <address>".
const nemesisChildEnv = "CACHEKIT_BENCH_NEMESIS_CHILD"

// nemesisL1Delta is the staleness bound the verdict of cachekit's L1 row
// allows: a silent tracking connection is found lost within 1 s of its
// last reply (pings every 250 ms), and L1 is cleared then; behind
// Sentinel the master is looked up every second (docs/production.md).
const nemesisL1Delta = time.Second

// nemesisUnbounded are the kinds for which the L1 row states no bound:
// the proxy's black hole drops the bytes of the tracking connection and
// lets it live on (TCP never does: it retransmits them or the connection
// fails), so a dropped invalidation goes unnoticed and L1 serves the old
// value for the entry's lifetime. Measured, reported, not failed; the L1
// row's mixed schedule leaves the black hole out.
var nemesisUnbounded = map[nemesis.Kind]bool{nemesis.BlackHole: true}

// nemesisCachekit adapts a cachekit Client to nemesis.Client.
type nemesisCachekit struct{ asideCachekit }

func (n nemesisCachekit) Get(ctx context.Context, key string) (int, bool, error) {
	v, err := cachekit.Get[int](ctx, n.c, key)
	if errors.Is(err, cachekit.ErrNotFound) {
		return 0, false, nil
	}
	return v, err == nil, err
}

func (n nemesisCachekit) MGetOrLoad(ctx context.Context, keys []string, load func(context.Context, []string) (map[string]int, error)) (map[string]int, error) {
	return cachekit.MGetOrLoad(ctx, n.c, keys, load)
}

func (n nemesisCachekit) SetIfAbsent(ctx context.Context, key string, v int) (bool, error) {
	return n.c.SetIfAbsent(ctx, key, v, 10*time.Minute)
}

// nemesisGoRedisCache adapts go-redis/cache to nemesis.Client. It has no
// multi-key load (MGetOrLoad is a Once per key) and its SetNX does not say
// whether it stored (SetIfAbsent reports false: the writer then deletes).
type nemesisGoRedisCache struct{ asideGoRedisCache }

func (n nemesisGoRedisCache) Get(ctx context.Context, key string) (int, bool, error) {
	var v int
	err := n.c.Get(ctx, key, &v)
	if errors.Is(err, cache.ErrCacheMiss) {
		return 0, false, nil
	}
	return v, err == nil, err
}

func (n nemesisGoRedisCache) MGetOrLoad(ctx context.Context, keys []string, load func(context.Context, []string) (map[string]int, error)) (map[string]int, error) {
	out := make(map[string]int, len(keys))
	for _, k := range keys {
		v, err := n.GetOrLoad(ctx, k, func(ctx context.Context) (int, error) {
			m, err := load(ctx, []string{k})
			return m[k], err
		})
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

func (n nemesisGoRedisCache) SetIfAbsent(ctx context.Context, key string, v int) (bool, error) {
	return false, n.c.Set(&cache.Item{Ctx: ctx, Key: key, Value: v, TTL: time.Minute, SetNX: true})
}

// nemesisRedis is a go-redis client for an Env's address (a URL, or
// "sentinel:" and the sentinels).
func nemesisRedis(addr string) (*redis.Client, error) {
	if addrs, ok := strings.CutPrefix(addr, "sentinel:"); ok {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster,
			SentinelAddrs: strings.Split(addrs, ","), ContextTimeoutEnabled: true, MaxRetries: -1}), nil
	}
	opt, err := redis.ParseURL(addr)
	if err != nil {
		return nil, err
	}
	opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
	return redis.NewClient(opt), nil
}

// nemesisClient builds the client of a row: impl "cachekit" (encrypted,
// leases and fleet single-flight, the reliability stack failing closed
// without its breaker; mode "L1": an L1 kept by invalidation) or
// "go-redis-cache" (no local cache). stats reports what cachekit's fence
// did; done closes the client.
func nemesisClient(impl, mode, addr string) (c nemesis.Client, stats func() string, done func(), err error) {
	rdb, err := nemesisRedis(addr)
	if err != nil {
		return nil, nil, nil, err
	}
	if impl == "go-redis-cache" {
		return nemesisGoRedisCache{asideGoRedisCache{cache.New(&cache.Options{Redis: rdb})}},
			func() string { return "unfenced=0 (no fence)" }, func() { _ = rdb.Close() }, nil
	}
	o := cachekit.Options{Redis: rdb, Encryption: &encryption.Config{MasterKey: fixture.MasterKey}, FleetSingleFlight: true,
		LeaseTTL: 2 * time.Second, Reliability: &cachekit.Reliability{DisableBreaker: true}, Logger: slog.New(slog.DiscardHandler)}
	if mode == "L1" {
		o.L1MaxBytes, o.Invalidation = 1<<20, &cachekit.Invalidation{}
	}
	ck, err := cachekit.New(o)
	if err != nil {
		_ = rdb.Close()
		return nil, nil, nil, err
	}
	stats = func() string {
		st := ck.Stats()
		return fmt.Sprintf("unfenced=%d fences=%d unknown=%d", st.Unfenced, st.Fences, st.UnknownWrites)
	}
	return nemesisCachekit{asideCachekit{ck}}, stats, func() { _ = ck.Close(); _ = rdb.Close() }, nil
}

// nemesisChild serves one client (spec: impl, mode, address) until stdin
// ends; TestMain calls it in a child process.
func nemesisChild(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 3 {
		return 2
	}
	c, stats, done, err := nemesisClient(f[0], f[1], f[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, "nemesis child:", err)
		return 1
	}
	defer done()
	if err := nemesis.Serve(c, os.Stdin, os.Stdout, stats); err != nil {
		fmt.Fprintln(os.Stderr, "nemesis child:", err)
		return 1
	}
	return 0
}

// nemesisRow is a column of the verdict table: a client setup and the δ
// its verdict allows.
type nemesisRow struct {
	name, impl, mode string
	delta            time.Duration
	fenced           bool // the client fences failed connections (rule 22)
	ops              int  // per goroutine and history (50 ms apart)
	ours             bool // a failure fails the test
}

// TestNemesisVerdicts runs the nemesis schedule of internal/nemesis for
// every fault kind, then mixed, against cachekit without L1 (strict),
// cachekit with L1 and invalidation (δ measured; the verdict at 1 s) and
// go-redis/cache (strict; its δ measured): per row and kind a fresh
// deployment, two clients in this process and one in a child process, a
// raw foreign writer, -nemesis.histories histories (8 at a time, 6
// goroutines, operations 50 ms apart) and at least -nemesis.faults faults
// (0-600 ms, a pause of 0.5-1 s before each). It logs one line per row and
// kind, writes the table (verdicts.md) and the failing histories'
// visualisations to -nemesis.artifacts, and fails when a cachekit row is
// not linearizable within its δ. Skipped under -short (TestNemesis in
// ./cachekit runs 100 histories per proxy kind and SIGSTOP).
func TestNemesisVerdicts(t *testing.T) {
	if testing.Short() {
		t.Skip("the long nemesis run runs without -short")
	}
	kinds := append(append(slices.Clone(nemesis.ProxyKinds), nemesis.ServerKinds...), nemesis.Failover, "mixed")
	if *nemesisKinds != "" {
		kinds = nil
		for k := range strings.SplitSeq(*nemesisKinds, ",") {
			kinds = append(kinds, nemesis.Kind(k))
		}
	}
	rows := []nemesisRow{
		{"cachekit-noL1", "cachekit", "noL1", 0, true, 10, true},
		{"cachekit-L1", "cachekit", "L1", nemesisL1Delta, true, 20, true},
		{"go-redis-cache", "go-redis-cache", "noLocal", 0, false, 10, false},
	}
	if *nemesisRows != "" {
		rows = slices.DeleteFunc(rows, func(r nemesisRow) bool { return !slices.Contains(strings.Split(*nemesisRows, ","), r.name) })
	}
	results := map[nemesis.Kind]map[string]nemesis.Result{}
	for i, kind := range kinds {
		results[kind] = map[string]nemesis.Result{}
		for j, row := range rows {
			t.Run(string(kind)+"/"+row.name, func(t *testing.T) {
				results[kind][row.name] = runNemesisRow(t, kind, row, uint64(i*len(rows)+j+1))
			})
		}
	}
	table := verdictTable(kinds, rows, results)
	t.Logf("verdicts:\n%s", table)
	if err := os.MkdirAll(*nemesisArtifacts, 0o755); err == nil {
		_ = os.WriteFile(filepath.Join(*nemesisArtifacts, "verdicts.md"), []byte(table), 0o644)
	}
}

// runNemesisRow runs one row against one kind ("mixed": every proxy and
// server kind).
func runNemesisRow(t *testing.T, kind nemesis.Kind, row nemesisRow, seed uint64) nemesis.Result {
	kinds := []nemesis.Kind{kind}
	if kind == "mixed" {
		kinds = append(slices.Clone(nemesis.ProxyKinds), nemesis.ServerKinds...)
		if row.mode == "L1" {
			kinds = slices.DeleteFunc(kinds, func(k nemesis.Kind) bool { return nemesisUnbounded[k] })
		}
	}
	ours := row.ours && !(row.mode == "L1" && nemesisUnbounded[kind])
	env := nemesis.Deploy(t, kinds)
	var stats []func() string
	var clients []nemesis.Client
	for range 2 {
		c, st, done, err := nemesisClient(row.impl, row.mode, env.Addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(done)
		clients, stats = append(clients, c), append(stats, st)
	}
	child := nemesis.StartChild(t, nemesisChildEnv, row.impl+" "+row.mode+" "+env.Addr)
	clients = append(clients, child)
	var count atomic.Int64
	cfg := nemesis.Config{
		Clients:    clients,
		Fenced:     row.fenced,
		Foreign:    env.Foreign,
		Ops:        row.ops,
		Delta:      row.delta,
		Pace:       50 * time.Millisecond,
		Parallel:   8,
		Seed:       seed,
		MinFaults:  *nemesisMinFaults,
		FaultCount: func() int { return int(count.Load()) },
		LossWindow: 100 * time.Millisecond,
		Nemesis:    nemesis.Schedule{Kinds: kinds, Gap: time.Second, Seed: seed, Count: &count}.Nemesis(t, env.Target),
		Artifacts:  *nemesisArtifacts,
		Name:       strings.ReplaceAll(t.Name(), "/", "_"),
	}
	res, err := nemesis.Run(bg, cfg, *nemesisHistories)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(res)
	t.Logf("errors: %s", res.TopErrors(4))
	fences := []string{}
	for _, st := range stats {
		fences = append(fences, st())
	}
	if st, err := child.Stats(bg); err == nil {
		fences = append(fences, st)
	}
	t.Logf("clients: %s", strings.Join(fences, "; "))
	if ours && res.Failed != 0 {
		for _, l := range res.Listings {
			t.Log(l)
		}
		t.Errorf("%d of %d histories not linearizable within δ %v; visualisations: %v", res.Failed, res.Histories, row.delta, res.Artifacts)
	}
	if res.CanaryMisses != 0 {
		t.Errorf("the model accepted %d of %d planted stale reads", res.CanaryMisses, res.Canaries)
	}
	return res
}

// verdictTable is the table of verdicts: per kind, each row's histories
// not linearizable within its δ (of how many), the faults, and the
// largest δ a history needed; then the histories that needed a failed
// Set's late landing (cacheaside.Input.Ghost) or a failover's loss.
func verdictTable(kinds []nemesis.Kind, rows []nemesisRow, results map[nemesis.Kind]map[string]nemesis.Result) string {
	var b strings.Builder
	b.WriteString("| fault kind |")
	for _, row := range rows {
		fmt.Fprintf(&b, " %s |", row.name)
	}
	b.WriteString("\n| --- |" + strings.Repeat(" --- |", len(rows)) + "\n")
	for _, kind := range kinds {
		fmt.Fprintf(&b, "| %s |", kind)
		for _, row := range rows {
			res, ok := results[kind][row.name]
			if !ok {
				b.WriteString(" |")
				continue
			}
			faults := 0
			for _, n := range res.Faults {
				faults += n
			}
			need := "0"
			switch m := res.MaxNeeded(); {
			case m < 0:
				need = "> 5 s"
			case m > 0:
				need = m.String()
			}
			fmt.Fprintf(&b, " %d / %d (δ %v), %d faults, δ needed %s", res.Failed, res.Histories, row.delta, faults, need)
			if res.Late > 0 {
				fmt.Fprintf(&b, ", %d late Set", res.Late)
			}
			if res.Lossy > 0 {
				fmt.Fprintf(&b, ", %d lossy", res.Lossy)
			}
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
