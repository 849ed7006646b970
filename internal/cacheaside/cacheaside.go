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

// Result is the outcome of Run.
type Result struct {
	Histories, Operations int
	// Failed counts histories porcupine found not linearizable (with δ);
	// Unknown those it could not decide within its time limit.
	Failed, Unknown int
	// Errors counts operations that returned an error (not recorded).
	Errors int
}

// input is an operation's input: a write of V (returned at Ret, ns since
// base) or a read begun at Call.
type input struct {
	Key   string
	Write bool
	V     int
	Call  int64
	Ret   int64
}

// retired is a value the register no longer holds: overwritten by a write
// that returned at Until.
type retired struct {
	V     int
	Until int64
}

// state is a register: its value and the values it held before.
type state struct {
	Cur  int
	Prev []retired
}

// Model is the porcupine model of a cache-aside register with staleness
// bound delta.
func Model(delta time.Duration) porcupine.Model {
	d := delta.Nanoseconds()
	return porcupine.Model{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			by := map[string][]porcupine.Operation{}
			var keys []string
			for _, op := range h {
				k := op.Input.(input).Key
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
			s, i := st.(state), in.(input)
			if i.Write {
				prev := append(slices.Clip(s.Prev), retired{V: s.Cur, Until: i.Ret})
				return true, state{Cur: i.V, Prev: prev}
			}
			v := out.(int)
			if v == s.Cur {
				return true, s
			}
			for _, r := range s.Prev {
				if r.V == v && i.Call <= r.Until+d {
					return true, s
				}
			}
			return false, s
		},
		Equal: func(a, b any) bool {
			x, y := a.(state), b.(state)
			return x.Cur == y.Cur && slices.Equal(x.Prev, y.Prev)
		},
		DescribeOperation: func(in, out any) string {
			i := in.(input)
			if i.Write {
				return fmt.Sprintf("write(%s, %d)", i.Key, i.V)
			}
			return fmt.Sprintf("read(%s) -> %v", i.Key, out)
		},
	}
}

// Run runs n histories and checks each with porcupine.
func Run(ctx context.Context, cfg Config, n int) (Result, error) {
	if len(cfg.Clients) == 0 {
		return Result{}, fmt.Errorf("cacheaside: no clients")
	}
	if cfg.Goroutines == 0 {
		cfg.Goroutines = 6
	}
	if cfg.Ops == 0 {
		cfg.Ops = 10
	}
	if cfg.Keys == 0 {
		cfg.Keys = 2
	}
	if cfg.MaxLoadDelay == 0 {
		cfg.MaxLoadDelay = time.Millisecond
	}
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
			var tick <-chan time.Time
			if cfg.Pace > 0 {
				t := time.NewTicker(cfg.Pace)
				defer t.Stop()
				tick = t.C
			}
			for range cfg.Ops {
				if tick != nil {
					<-tick
				}
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
					op = porcupine.Operation{ClientId: g, Input: input{Key: key, Write: true, V: v, Ret: ret}, Call: call, Output: 0, Return: ret}
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
					op = porcupine.Operation{ClientId: g, Input: input{Key: key, Call: call}, Call: call, Output: v, Return: ret}
				}
				mu.Lock()
				if err != nil {
					errs++
				} else {
					ops = append(ops, op)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ops, errs
}
