package flight

import (
	"context"
	"sync"
	"time"
)

// Group runs one function per key at a time and shares its result with
// every caller that arrives while it runs. The zero Group is ready to use;
// set its fields before the first call.
type Group struct {
	// Missing is the error a batch run gives a key its load did not
	// return (Claim).
	Missing error
	// Panic turns a recovered panic of the function into its run's error;
	// nil means an error-free nil result.
	Panic func(recovered any) error

	mu sync.Mutex
	m  map[string]*Flight
}

// Flight is one run in progress.
type Flight struct {
	done chan struct{}
	// val and err are written once, before done closes.
	val     any
	err     error
	waiters int                // callers waiting; guarded by the group's mu
	ctx     context.Context    // the function's ctx
	cancel  context.CancelFunc // ends ctx
}

// Do runs fn for key in g, or joins the run in progress; led reports that
// this caller started the run. fn's ctx keeps ctx's values; it ends after
// timeout, when bg ends, or when every caller has stopped waiting. The
// result is the run's value as any: a caller that joined a run another
// caller started may have asked for another V (cachekit's GetOrLoad[T] of
// one key with two types), and asserts its own.
func Do[V any](g *Group, ctx, bg context.Context, timeout time.Duration, key string, fn func(context.Context) (V, error)) (_ any, led bool, _ error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*Flight)
	}
	f, ok := g.m[key]
	led = !ok
	if !ok {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		stop := context.AfterFunc(bg, cancel)
		f = &Flight{done: make(chan struct{}), ctx: fctx, cancel: func() { stop(); cancel() }}
		g.m[key] = f
		go g.run(fctx, key, f, func(ctx context.Context) (any, error) { return fn(ctx) })
	}
	f.waiters++
	g.mu.Unlock()
	return g.Wait(ctx, key, f, led)
}

// Wait waits for f, key's flight, as a caller registered by Do or Claim:
// it returns f's result, or ctx's error when ctx ends first (the caller
// leaves f), or f's ctx error when f timed out or was cancelled.
func (g *Group) Wait(ctx context.Context, key string, f *Flight, led bool) (any, bool, error) {
	select {
	case <-f.done:
		return f.val, led, f.err
	case <-ctx.Done():
		g.Leave(key, f)
		return nil, led, ctx.Err()
	case <-f.ctx.Done():
		// Timed out or cancelled by Close: whether or not the function
		// honours its ctx, nobody waits for it any more, and the next
		// caller starts afresh.
		select {
		case <-f.done:
			return f.val, led, f.err
		default:
		}
		g.forget(key, f)
		return nil, led, f.ctx.Err()
	}
}

// forget removes f from the group if it is still key's flight.
func (g *Group) forget(key string, f *Flight) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.m[key] == f {
		delete(g.m, key)
	}
}

// Leave records that a caller stopped waiting for f. When none is left
// and f has not finished, f is cancelled and forgotten: nobody is waiting
// for it, and a later caller must not join a run that may be stuck.
func (g *Group) Leave(key string, f *Flight) {
	g.mu.Lock()
	defer g.mu.Unlock()
	f.waiters--
	if f.waiters > 0 {
		return
	}
	select {
	case <-f.done:
		return
	default:
	}
	f.cancel()
	if g.m[key] == f {
		delete(g.m, key)
	}
}

func (g *Group) run(ctx context.Context, key string, f *Flight, fn func(context.Context) (any, error)) {
	defer func() {
		if r := recover(); r != nil && g.Panic != nil {
			f.err = g.Panic(r)
		}
		g.mu.Lock()
		if g.m[key] == f {
			delete(g.m, key)
		}
		g.mu.Unlock()
		// done before cancel: a waiter that sees the ctx end must find
		// the result already there.
		close(f.done)
		f.cancel()
	}()
	f.val, f.err = fn(ctx)
}

// Claim makes this caller the loader of every key in keys that no flight
// is loading, and a waiter of every key's flight. It returns the keys it
// leads, the flight of each key (in keys' order) and the batch, which the
// caller must run (Run: once, in its own goroutine) when it leads any key.
// The caller then waits for each flight with Wait, or leaves the ones it
// no longer waits for with Leave.
func (g *Group) Claim(ctx, bg context.Context, timeout time.Duration, keys []string) (lead []string, flights []*Flight, b *Batch) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
	stop := context.AfterFunc(bg, cancel)
	var led []*Flight
	g.mu.Lock()
	if g.m == nil {
		g.m = make(map[string]*Flight)
	}
	flights = make([]*Flight, len(keys))
	for i, k := range keys {
		f, ok := g.m[k]
		if !ok {
			// A batch flight is not cancelled when its own waiters
			// leave: other keys of the batch may still be waited for.
			f = &Flight{done: make(chan struct{}), ctx: fctx, cancel: func() {}}
			g.m[k] = f
			lead = append(lead, k)
			led = append(led, f)
		}
		f.waiters++
		flights[i] = f
	}
	g.mu.Unlock()
	if len(lead) == 0 {
		stop()
		cancel()
	}
	return lead, flights, &Batch{g: g, lead: lead, led: led, ctx: fctx, end: func() { stop(); cancel() }}
}

// Batch is the run of the keys a Claim leads.
type Batch struct {
	g    *Group
	lead []string
	led  []*Flight
	ctx  context.Context
	end  func()
}

// Run calls load with b's ctx (the flights' ctx) and resolves each flight
// b leads with its key's value from load's map (the Group's Missing when
// the map has none, load's error for all when it fails).
func Run[V any](b *Batch, load func(context.Context) (map[string]V, error)) {
	defer b.end()
	vals, err := load(b.ctx)
	g := b.g
	g.mu.Lock()
	for i, k := range b.lead {
		f := b.led[i]
		switch v, ok := vals[k]; {
		case err != nil:
			f.err = err
		case ok:
			f.val = v
		default:
			f.err = g.Missing
		}
		if g.m[k] == f {
			delete(g.m, k)
		}
	}
	g.mu.Unlock()
	for _, f := range b.led {
		close(f.done)
	}
}

// Done is closed when f's run has finished and its result is set.
func (f *Flight) Done() <-chan struct{} { return f.done }

// Context is the run's ctx: it ends when the run times out or is
// cancelled (see Group.Do).
func (f *Flight) Context() context.Context { return f.ctx }

// Result is the run's value and error; read it only after Done is closed.
func (f *Flight) Result() (any, error) { return f.val, f.err }

// Waiting returns how many callers wait for key's flight (0: none runs).
// Tests use it to hold a step until callers have joined.
func (g *Group) Waiting(key string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if f := g.m[key]; f != nil {
		return f.waiters
	}
	return 0
}
