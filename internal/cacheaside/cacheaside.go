package cacheaside

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Cache is what a cache-aside application calls; each client of a history
// is one (its own connection pool, its own L1).
type Cache interface {
	GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error)
	Set(ctx context.Context, key string, v int) error
	Delete(ctx context.Context, key string) error
}

// Config is one run of histories.
type Config struct {
	Clients []Cache
	// Foreign deletes a key as another tool would (a raw DEL); nil: no
	// foreign writers.
	Foreign func(ctx context.Context, key string) error
	// Goroutines per history (spread over Clients), Ops per goroutine,
	// Keys per history. Defaults: 6, 10, 2.
	Goroutines, Ops, Keys int
	// Delta is the staleness bound δ (0: strict linearizability).
	Delta time.Duration
	// MaxLoadDelay bounds the loader's pause after it read the source.
	// Default: 1 ms.
	MaxLoadDelay time.Duration
	// Pace is the interval between two operations of a goroutine (a
	// time.Ticker: a rate, not a wait), so a history lasts about Ops ×
	// Pace: a staleness bound is only tested by histories longer than it.
	// 0: back to back.
	Pace time.Duration
	// Seed makes the operation mix reproducible.
	Seed uint64
	// NotFound, when set, makes absence part of the histories: every key
	// starts absent from the source, a third of the writers remove it
	// (then Delete it from the cache, or DEL it as a foreign writer), the
	// loader returns NotFound for an absent key, and a read that returns
	// an error matching NotFound read "absent" (recorded as 0, the value
	// the register holds while the key is absent). nil: the source starts
	// at 0 and reads of it are values.
	NotFound error
}

// Shape is the shape of a run's histories: Goroutines per history (spread
// over the clients), Ops per goroutine, Keys per history, the loader's
// pause after it read the source (at most MaxLoadDelay) and the interval
// between two operations of a goroutine (Pace; 0: back to back). Run and
// the nemesis schedule (internal/nemesis) share it.
type Shape struct {
	Goroutines, Ops, Keys int
	MaxLoadDelay, Pace    time.Duration
}

// WithDefaults returns s with its zero fields at their defaults: 6
// goroutines, 10 operations, 2 keys, 1 ms.
func (s Shape) WithDefaults() Shape {
	if s.Goroutines == 0 {
		s.Goroutines = 6
	}
	if s.Ops == 0 {
		s.Ops = 10
	}
	if s.Keys == 0 {
		s.Keys = 2
	}
	if s.MaxLoadDelay == 0 {
		s.MaxLoadDelay = time.Millisecond
	}
	return s
}

// Paced calls op s.Ops times, each on a tick of s.Pace (a time.Ticker: a
// rate, not a wait), or back to back when s.Pace is 0.
func (s Shape) Paced(op func()) {
	var tick <-chan time.Time
	if s.Pace > 0 {
		t := time.NewTicker(s.Pace)
		defer t.Stop()
		tick = t.C
	}
	for range s.Ops {
		if tick != nil {
			<-tick
		}
		op()
	}
}

// Result is the outcome of Run.
type Result struct {
	Histories, Operations int
	// Failed counts histories porcupine found not linearizable (with δ);
	// Unknown those it could not decide within its time limit.
	Failed, Unknown int
	// Errors counts operations that returned an error (not recorded).
	Errors int
}

// Input is an operation's input: a write of V (returned at Ret, ns since
// the history's base) or a read begun at Call. A negative V is an absence
// with a token of its own (a Delete in a history where the cache is the
// data: internal/nemesis's Config.Register): a read of 0 reads it. Porcupine checks a history
// of Operations whose Input is an Input and whose Output is the int a read
// returned (anything for a write).
type Input struct {
	Key   string
	Write bool
	V     int
	Call  int64
	Ret   int64
	// Unknown marks a write whose cache call failed: it may or may not
	// have reached the cache, and may land later. It is porcupine's
	// operation that never returned: Ret (and the Operation's Return) is
	// the end of the history, so it may take effect at any point after its
	// call, or never (last). An unknown write may land after later writes
	// of other clients, so it does not advance the order of definite
	// writes (High).
	Unknown bool
	// Bound, when positive, is the value of the first write of Key this
	// unknown write must precede (its client fences a failed connection:
	// the client's next successful write of Key, and every write called
	// after the fence ran, come after it): it may not take effect once a
	// definite write of Bound or a later value has.
	Bound int
	// Ghost marks an unknown write that stores its value (a Set, a SET NX):
	// it may land late, after later writes of other clients, so its value
	// may be read again after them, until its Bound takes effect (without
	// a Bound, to the end). A late delete brings no old value back: the
	// next read loads from the source.
	Ghost bool
	// Losable marks a write acknowledged in a window in which the server
	// may lose it (a failover: asynchronous replication): the value it
	// replaced may be read again until a later write outside such a
	// window.
	Losable bool
}

// retired is a value the register no longer holds: overwritten by a write
// that returned at Until. Loss marks a value a losable write replaced: it
// may come back whatever the time, until a write that stays replaces it.
type retired struct {
	V     int
	Until int64
	Loss  bool
}

// state is a register: its value, the highest value a definite write gave
// it, the values it held before, and the ghosts: values of unknown writes
// that may still land.
type state struct {
	Cur    int
	High   int
	Prev   []retired
	Ghosts []ghost
}

// ghost is the value of a Ghost write, readable while no definite write of
// Bound or later has taken effect (Bound 0: always).
type ghost struct{ V, Bound int }

// Model is the porcupine model of a cache-aside register with staleness
// bound delta: a read returns the register's value at some point of its
// interval, or a value overwritten by a write that returned less than
// delta before the read began (delta 0: that began before the write
// returned). Whatever delta, a read may return the value of a Ghost write
// until its Bound, and a value a Losable
// write replaced until a write that is not losable comes, and an Unknown
// write with a Bound may not take effect once a write of the Bound's value
// (or a later definite value) has.
func Model(delta time.Duration) porcupine.Model {
	d := delta.Nanoseconds()
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(Input).Key
				if _, ok := by[k]; !ok {
					keys = append(keys, k)
				}
				by[k] = append(by[k], op)
			}
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, by[k])
			}
			return out
		},
		Init: func() any { return state{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(state), in.(Input)
			if i.Write {
				return write(s, i)
			}
			v := out.(int)
			if same(v, s.Cur) {
				return true, s
			}
			for _, r := range s.Prev {
				if same(v, r.V) && (r.Loss || i.Call <= r.Until+d) {
					return true, s
				}
			}
			for _, g := range s.Ghosts {
				if g.V == v && (g.Bound == 0 || s.High < g.Bound) {
					return true, s
				}
			}
			return false, s
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.Cur == y.Cur && x.High == y.High && slices.Equal(x.Prev, y.Prev) && slices.Equal(x.Ghosts, y.Ghosts)
		},
		DescribeOperation: func(in, out any) string {
			i := in.(Input)
			if i.Write {
				tag := ""
				switch {
				case i.Unknown && i.Bound > 0:
					tag = fmt.Sprintf(" unknown, before %d", i.Bound)
				case i.Unknown:
					tag = " unknown"
				}
				if i.Losable {
					tag += " losable"
				}
				return fmt.Sprintf("write(%s, %d)%s", i.Key, i.V, tag)
			}
			return fmt.Sprintf("read(%s) -> %v", i.Key, out)
		},
		DescribeState: func(st any) string {
			s := st.(state)
			return fmt.Sprintf("%d (high %d, %d retired)", s.Cur, s.High, len(s.Prev))
		},
	}
}

// same reports whether a read of v returns the register's value x: the
// value itself, or, for a read of 0 ("absent"), any absent value (0, or a
// Delete's negative token in a register history: see Input.V).
func same(v, x int) bool { return v == x || v == 0 && x < 0 }

// write is the register's step for write i: it retires the current value
// at i.Ret and caps every older value's retirement at i.Ret too (a value
// two writes old is at least as old as the last one), unless i may be lost.
func write(s state, i Input) (bool, state) {
	if i.Bound > 0 && s.High >= i.Bound {
		return false, s // the unknown write landed after the client's next write
	}
	prev := make([]retired, 0, len(s.Prev)+1)
	for _, r := range s.Prev {
		if !i.Losable && (r.Loss || r.Until > i.Ret) {
			r.Until, r.Loss = min(r.Until, i.Ret), false
		}
		prev = append(prev, r)
	}
	prev = append(prev, retired{V: s.Cur, Until: i.Ret, Loss: i.Losable})
	high := s.High
	if !i.Unknown {
		high = max(high, i.V)
	}
	ghosts := s.Ghosts
	if i.Ghost {
		ghosts = append(slices.Clip(ghosts), ghost{V: i.V, Bound: i.Bound})
	}
	return true, state{Cur: i.V, High: high, Prev: prev, Ghosts: ghosts}
}

// Run runs n histories and checks each with porcupine.
func Run(ctx context.Context, cfg Config, n int) (Result, error) {
	if len(cfg.Clients) == 0 {
		return Result{}, fmt.Errorf("cacheaside: no clients")
	}
	sh := Shape{cfg.Goroutines, cfg.Ops, cfg.Keys, cfg.MaxLoadDelay, cfg.Pace}.WithDefaults()
	cfg.Goroutines, cfg.Ops, cfg.Keys, cfg.MaxLoadDelay = sh.Goroutines, sh.Ops, sh.Keys, sh.MaxLoadDelay
	var res Result
	model := Model(cfg.Delta)
	for h := range n {
		ops, errs := history(ctx, cfg, h)
		res.Histories++
		res.Operations += len(ops)
		res.Errors += errs
		switch porcupine.CheckOperationsTimeout(model, ops, 10*time.Second) {
		case porcupine.Illegal:
			res.Failed++
		case porcupine.Unknown:
			res.Unknown++
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
	}
	return res, nil
}

// history runs one history on fresh keys and returns its operations and
// how many operations failed.
func history(ctx context.Context, cfg Config, h int) ([]porcupine.Operation, int) {
	keys := make([]string, cfg.Keys)
	locks := make([]sync.Mutex, cfg.Keys)
	src := make([]int, cfg.Keys) // guarded by srcMu
	var srcMu sync.Mutex
	for i := range keys {
		keys[i] = fmt.Sprintf("ca:%d:%d:%d", cfg.Seed, h, i)
	}
	base := time.Now()
	now := func() int64 { return time.Since(base).Nanoseconds() }
	var mu sync.Mutex
	var ops []porcupine.Operation
	errs := 0
	next := 0 // the next value written, guarded by srcMu
	var wg sync.WaitGroup
	for g := range cfg.Goroutines {
		c := cfg.Clients[g%len(cfg.Clients)]
		rng := rand.New(rand.NewPCG(cfg.Seed, uint64(h)<<16|uint64(g)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			Shape{Ops: cfg.Ops, Pace: cfg.Pace}.Paced(func() {
				k := rng.IntN(cfg.Keys)
				key := keys[k]
				kind := rng.IntN(10)
				var op porcupine.Operation
				var err error
				switch {
				case kind < 3: // writer: the source, then the cache, under the key's lock
					locks[k].Lock()
					call := now()
					srcMu.Lock()
					next++
					v := next
					if cfg.NotFound != nil && rng.IntN(3) == 0 {
						v = 0 // a removal: the key is absent from the source
					}
					src[k] = v
					srcMu.Unlock()
					switch {
					case kind == 0 && cfg.Foreign != nil:
						err = cfg.Foreign(ctx, key)
					case kind == 1 && v != 0:
						err = c.Set(ctx, key, v)
					default:
						err = c.Delete(ctx, key)
					}
					ret := now()
					locks[k].Unlock()
					op = porcupine.Operation{ClientId: g, Input: Input{Key: key, Write: true, V: v, Ret: ret}, Call: call, Output: 0, Return: ret}
				default: // reader
					delay := time.Duration(rng.Int64N(int64(cfg.MaxLoadDelay)))
					call := now()
					var v int
					v, err = c.GetOrLoad(ctx, key, func(context.Context) (int, error) {
						srcMu.Lock()
						v := src[k]
						srcMu.Unlock()
						time.Sleep(delay) // the query's way back
						if v == 0 && cfg.NotFound != nil {
							return 0, cfg.NotFound
						}
						return v, nil
					})
					if err != nil && cfg.NotFound != nil && errors.Is(err, cfg.NotFound) {
						v, err = 0, nil // read "absent"
					}
					ret := now()
					op = porcupine.Operation{ClientId: g, Input: Input{Key: key, Call: call}, Call: call, Output: v, Return: ret}
				}
				mu.Lock()
				if err != nil {
					errs++
				} else {
					ops = append(ops, op)
				}
				mu.Unlock()
			})
		}()
	}
	wg.Wait()
	return ops, errs
}
