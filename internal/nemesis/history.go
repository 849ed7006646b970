package nemesis

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
)

// Client is one cache of a history, in this process or another (Remote):
// the reads and writes a cache-aside application makes.
type Client interface {
	// Get returns the cached value, found false on a miss.
	Get(ctx context.Context, key string) (v int, found bool, err error)
	GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error)
	MGetOrLoad(ctx context.Context, keys []string, load func(ctx context.Context, keys []string) (map[string]int, error)) (map[string]int, error)
	Set(ctx context.Context, key string, v int) error
	Delete(ctx context.Context, key string) error
	// SetIfAbsent stores v only if the key holds nothing.
	SetIfAbsent(ctx context.Context, key string, v int) (stored bool, err error)
}

// Foreign writes key as another tool would: a raw DEL, or (set) a raw SET
// of bytes no Client can open.
type Foreign func(ctx context.Context, key string, set bool) error

// Config is one run of histories under a nemesis.
type Config struct {
	// Clients are the caches; a history's goroutines are spread over them.
	Clients []Client
	// Fenced says the Clients fence a failed connection (cachekit's rule
	// 22): a write whose outcome is unknown lands before the same
	// Client's next write to that server that succeeds, or never. The
	// check then holds each unknown write to that (Input.Bound); false: an
	// unknown write may land at any later time.
	Fenced bool
	// Cluster says the keys are spread over a Redis Cluster's masters:
	// a fence covers one master, so only a later write of a key in the
	// same hash slot (Slot: always on the same master) bounds an unknown
	// write; false: one server serves every key.
	Cluster bool
	// Foreign, if not nil, is a writer outside the Clients (a raw client);
	// its failed writes are never settled.
	Foreign Foreign
	// Goroutines per history, Ops per goroutine, Keys per history.
	// Defaults: 6, 10, 2.
	Goroutines, Ops, Keys int
	// Delta is the staleness bound δ of the verdict (0: strict).
	Delta time.Duration
	// MaxLoadDelay bounds the loader's pause after it read the source.
	// Default: 1 ms.
	MaxLoadDelay time.Duration
	// Pace is the interval between two operations of a goroutine (a
	// ticker); 0: back to back.
	Pace time.Duration
	// OpTimeout is each operation's deadline. Default: 5 s.
	OpTimeout time.Duration
	// Parallel is how many histories run at once (each on its own keys).
	// Default: 1.
	Parallel int
	// MinFaults, when positive, makes Run go on past its n histories until
	// FaultCount says the nemesis has injected that many faults.
	MinFaults  int
	FaultCount func() int
	// Seed makes the operation mix reproducible.
	Seed uint64
	// Register makes the cache the data itself, as a session or token
	// store uses it: no source of truth, no loads and no locks. A writer
	// Sets a fresh value or Deletes the key; a reader Gets it (a miss
	// reads absent) and, three times in five when it found a value,
	// consumes it: Deletes what it just saw (a logout). Every write has a
	// token of its own (a Delete's negative), so a deleted value read
	// again is a violation. Fenced must be false: its bound needs the
	// writes of a key made one at a time.
	Register bool
	// Nemesis, if not nil, injects faults while the histories run: Run
	// calls it on its own goroutine (a test's, so it may fail the test)
	// with a ctx that ends when the last history has, and keys, which
	// returns the keys of the history running; it returns the faults it
	// injected, each healed.
	Nemesis func(ctx context.Context, keys func() []string) []Fault
	// LossWindow is how long before a losing fault (Fault.Loses: a
	// failover) a write acknowledged by the server may still be lost.
	LossWindow time.Duration
	// Artifacts, if not empty, is a directory where the porcupine
	// visualisation of each failing history is written, named Name-N.html.
	Artifacts, Name string
}

// shape is the shape of cfg's histories.
func (cfg Config) shape() cacheaside.Shape {
	return cacheaside.Shape{Goroutines: cfg.Goroutines, Ops: cfg.Ops, Keys: cfg.Keys, MaxLoadDelay: cfg.MaxLoadDelay, Pace: cfg.Pace}
}

// op kinds.
const (
	opGet         = "get"
	opGetOrLoad   = "getorload"
	opMGetOrLoad  = "mgetorload"
	opSet         = "set"
	opDelete      = "delete"
	opSetIfAbsent = "setifabsent"
	opForeignDel  = "foreign-del"
	opForeignSet  = "foreign-set"
)

// record is one operation as it ran: for a write, the value it gave the
// source; for a read, the values it returned by key.
type record struct {
	g      int // the goroutine
	client int // index in Config.Clients; -1: the foreign writer
	kind   string
	key    string
	v      int            // a write's value
	reads  map[string]int // a read's values by key
	call   int64
	ret    int64
	err    error
}

func (r record) write() bool {
	switch r.kind {
	case opSet, opDelete, opSetIfAbsent, opForeignDel, opForeignSet:
		return true
	}
	return false
}

// history is one history as it ran, before it is checked.
type history struct {
	n       int
	base    time.Time
	end     int64 // after the last return, ns since base
	records []record
	cluster bool // Config.Cluster: a fence covers the keys of one slot
}

// runHistories runs n histories (more while cfg.MinFaults asks for them),
// cfg.Parallel at a time, publishing the keys of those running in cur.
func runHistories(ctx context.Context, cfg Config, n int, cur *running) ([]history, error) {
	var mu sync.Mutex
	var out []history
	next := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Parallel {
		wg.Go(func() {
			for h := range next {
				hist := runOne(ctx, cfg, h, cur)
				mu.Lock()
				out = append(out, hist)
				mu.Unlock()
			}
		})
	}
	for h := 0; h < n || (cfg.MinFaults > 0 && cfg.FaultCount() < cfg.MinFaults); h++ {
		if ctx.Err() != nil {
			break
		}
		next <- h
	}
	close(next)
	wg.Wait()
	slices.SortFunc(out, func(a, b history) int { return cmp.Compare(a.n, b.n) })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// running holds the keys of the histories running now.
type running struct {
	mu   sync.Mutex
	keys map[int][]string
}

func (r *running) set(h int, keys []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if keys == nil {
		delete(r.keys, h)
		return
	}
	r.keys[h] = keys
}

// all returns the keys of every history running.
func (r *running) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ks := range r.keys {
		out = append(out, ks...)
	}
	return out
}

// runOne runs history h on fresh keys.
func runOne(ctx context.Context, cfg Config, h int, cur *running) history {
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("nm:%d:%d:%d", cfg.Seed, h, i)
	}
	cur.set(h, keys)
	defer cur.set(h, nil)
	locks := make([]sync.Mutex, cfg.Keys)
	var srcMu sync.Mutex
	src := map[string]int{} // the source of truth, guarded by srcMu
	next := 0               // the next value written, guarded by srcMu
	read := func(ks []string) map[string]int {
		srcMu.Lock()
		defer srcMu.Unlock()
		m := make(map[string]int, len(ks))
		for _, k := range ks {
			m[k] = src[k]
		}
		return m
	}
	hist := history{n: h, base: time.Now(), cluster: cfg.Cluster}
	now := func() int64 { return time.Since(hist.base).Nanoseconds() }
	var mu sync.Mutex
	var wg sync.WaitGroup
	token := func() int {
		srcMu.Lock()
		defer srcMu.Unlock()
		next++
		return next
	}
	add := func(rec record) {
		mu.Lock()
		hist.records = append(hist.records, rec)
		mu.Unlock()
	}
	for g := range cfg.Goroutines {
		ci := g % len(cfg.Clients)
		c := cfg.Clients[ci]
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(h)<<16|uint64(g)))
		wg.Go(func() {
			if cfg.Register {
				cfg.shape().Paced(func() {
					registerOp(ctx, cfg, c, rng, keys[rng.IntN(cfg.Keys)], record{g: g, client: ci}, now, token, add)
				})
				return
			}
			cfg.shape().Paced(func() {
				k := rng.IntN(cfg.Keys)
				key := keys[k]
				delay := time.Duration(rng.Int64N(int64(cfg.MaxLoadDelay)))
				load := func(ctx context.Context, ks []string) (map[string]int, error) {
					m := read(ks)
					time.Sleep(delay) // the query's way back: a write may land meanwhile
					return m, nil
				}
				octx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
				rec := record{g: g, client: ci, key: key}
				roll := rng.IntN(100)
				if roll < 27 { // a writer: the source, then the cache, under the key's lock
					locks[k].Lock()
					rec.call = now()
					srcMu.Lock()
					next++
					rec.v = next
					src[key] = next
					srcMu.Unlock()
					rec.kind, rec.err = writeCache(octx, cfg, c, roll, key, rec.v)
					if rec.kind == opForeignDel || rec.kind == opForeignSet {
						rec.client = -1
					}
					rec.ret = now()
					locks[k].Unlock()
				} else {
					rec.call = now()
					rec.kind, rec.reads, rec.err = readCache(octx, c, roll, key, keys, load)
					rec.ret = now()
				}
				cancel()
				mu.Lock()
				hist.records = append(hist.records, rec)
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	hist.end = now() + 1
	return hist
}

// registerOp makes one operation of a Register history on key: a Set of
// a fresh value, a Delete, or a Get that, three times in five when it found
// a value, Deletes it (a second record). rec holds the goroutine and the
// client; add keeps each record.
func registerOp(ctx context.Context, cfg Config, c Client, rng *rand.Rand, key string, rec record,
	now func() int64, token func() int, add func(record)) {
	ctx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
	defer cancel()
	rec.key = key
	roll := rng.IntN(100)
	switch {
	case roll < 30:
		rec.kind, rec.v, rec.call = opSet, token(), now()
		rec.err = c.Set(ctx, key, rec.v)
	case roll < 40:
		rec.kind, rec.v, rec.call = opDelete, -token(), now()
		rec.err = c.Delete(ctx, key)
	default:
		rec.kind, rec.call = opGet, now()
		v, found, err := c.Get(ctx, key)
		rec.ret, rec.err = now(), err
		if err == nil {
			rec.reads = map[string]int{key: v} // v is 0 on a miss: absent
		}
		add(rec)
		if err != nil || !found || roll < 64 {
			return
		}
		rec.kind, rec.v, rec.reads, rec.call = opDelete, -token(), nil, now()
		rec.err = c.Delete(ctx, key)
	}
	rec.ret = now()
	add(rec)
}

// writeCache makes the cache write of a writer whose roll (0-26) picks
// its kind: Set, Delete, SetIfAbsent (and Delete when it stored nothing),
// a foreign DEL or SET.
func writeCache(ctx context.Context, cfg Config, c Client, roll int, key string, v int) (string, error) {
	switch {
	case roll < 8:
		return opSet, c.Set(ctx, key, v)
	case roll < 19 && roll >= 14:
		stored, err := c.SetIfAbsent(ctx, key, v)
		if err == nil && !stored {
			err = c.Delete(ctx, key) // it holds an older value, or a load's lease
		}
		return opSetIfAbsent, err
	case roll >= 19 && roll < 23 && cfg.Foreign != nil:
		return opForeignDel, cfg.Foreign(ctx, key, false)
	case roll >= 23 && cfg.Foreign != nil:
		return opForeignSet, cfg.Foreign(ctx, key, true)
	default:
		return opDelete, c.Delete(ctx, key)
	}
}

// readCache makes the read a reader's roll (27-99) picks: GetOrLoad,
// MGetOrLoad of every key of the history, or Get.
func readCache(ctx context.Context, c Client, roll int, key string, keys []string,
	load func(context.Context, []string) (map[string]int, error)) (string, map[string]int, error) {
	switch {
	case roll < 55:
		v, err := c.GetOrLoad(ctx, key, func(ctx context.Context) (int, error) {
			m, err := load(ctx, []string{key})
			return m[key], err
		})
		return opGetOrLoad, map[string]int{key: v}, err
	case roll < 75:
		m, err := c.MGetOrLoad(ctx, keys, load)
		return opMGetOrLoad, m, err
	default:
		v, found, err := c.Get(ctx, key)
		if !found {
			return opGet, nil, err
		}
		return opGet, map[string]int{key: v}, err
	}
}
