package swr

import (
	"cmp"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

const (
	// MaxTracked bounds the keys whose expiry is remembered; past it,
	// new keys are not tracked (they expire and miss as without SWR).
	MaxTracked = 1 << 16
	// RetryAfter is how long a key whose refresh failed waits before
	// the next attempt.
	RetryAfter = time.Second
)

// meta is what the Client remembers about a GetOrLoad key: when it
// expires in L2 and the TTL it was stored with.
type meta struct {
	expires int64 // unix nanos, by the Client's clock
	ttl     time.Duration
	retryAt int64 // no refresh before this (after a failed one)
}

// State is the SWR bookkeeping of one Client (the Client keeps none when
// SWR is off).
type State struct {
	ratio, jitter float64
	slots         chan struct{}

	mu         sync.Mutex
	meta       map[string]meta
	refreshing map[string]struct{}
	stopped    bool // Wait was called: Go starts nothing more

	wg              sync.WaitGroup
	started, failed atomic.Uint64
	skipped         atomic.Uint64
}

// Config is stale-while-revalidate's settings; cachekit.SWR documents each
// field and converts into it (swr.Config(o)), so the two keep one field
// list. A zero field takes its default.
type Config struct {
	Ratio, Jitter float64
	MaxRefreshes  int
}

// The defaults of Config's fields.
const (
	DefaultRatio        = 0.5
	DefaultJitter       = 0.1
	DefaultMaxRefreshes = 10
)

// Invalid names the first field out of its range and why; "" when every
// field is in range.
func (c Config) Invalid() (field, why string) {
	switch {
	case c.Ratio < 0 || c.Ratio >= 1:
		return "Ratio", "must be within [0, 1)"
	case c.Jitter < 0 || c.Jitter > 0.5:
		return "Jitter", "must be within [0, 0.5]"
	case c.MaxRefreshes < 0:
		return "MaxRefreshes", "is negative"
	}
	return "", ""
}

// NewState returns the State of c, its zero fields taking their defaults.
func (c Config) NewState() *State {
	return New(cmp.Or(c.Ratio, DefaultRatio), cmp.Or(c.Jitter, DefaultJitter), cmp.Or(c.MaxRefreshes, DefaultMaxRefreshes))
}

// New returns a State that refreshes an entry once its remaining TTL is at
// most ratio × TTL × a factor in [1-jitter, 1+jitter], with at most
// maxRefreshes refreshes at once.
func New(ratio, jitter float64, maxRefreshes int) *State {
	w := &State{ratio: ratio, jitter: jitter}
	w.slots = make(chan struct{}, maxRefreshes)
	w.meta = make(map[string]meta)
	w.refreshing = make(map[string]struct{})
	return w
}

// Record remembers that key expires remaining from now and was stored
// with ttl.
func (w *State) Record(key string, now time.Time, remaining, ttl time.Duration) {
	if remaining <= 0 {
		return
	}
	exp := now.Add(remaining).UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.meta[key]; !ok && len(w.meta) >= MaxTracked {
		n := now.UnixNano()
		for k, m := range w.meta {
			if m.expires <= n {
				delete(w.meta, k)
			}
		}
		if len(w.meta) >= MaxTracked {
			return
		}
	}
	w.meta[key] = meta{expires: exp, ttl: ttl}
}

// Observe is Record for an entry read from Redis: it keeps the full
// lifetime learned when this process stored the entry (which a loader's
// OverrideTTL may have set) over the ttl of the call that read it.
func (w *State) Observe(key string, now time.Time, remaining, ttl time.Duration) {
	w.mu.Lock()
	if m, ok := w.meta[key]; ok && m.ttl > 0 {
		ttl = m.ttl
	}
	w.mu.Unlock()
	w.Record(key, now, remaining, ttl)
}

// Rewritten updates a tracked key after a plain Set stored it for ttl.
func (w *State) Rewritten(key string, now time.Time, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m, ok := w.meta[key]; ok {
		m.expires, m.retryAt = now.Add(ttl).UnixNano(), 0
		w.meta[key] = m
	}
}

// Forget drops what is known about key (Delete, invalidation).
func (w *State) Forget(key string) {
	w.mu.Lock()
	delete(w.meta, key)
	w.mu.Unlock()
}

// ForgetAll drops everything (L1 flush).
func (w *State) ForgetAll() {
	w.mu.Lock()
	clear(w.meta)
	w.mu.Unlock()
}

// Claim reports whether key is due for a refresh, and if so reserves the
// key's single refresh and a refresh slot; the caller must then call Done.
func (w *State) Claim(key string, now time.Time, ttl time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	m, ok := w.meta[key]
	if !ok {
		return false
	}
	n := now.UnixNano()
	left := time.Duration(m.expires - n)
	if left <= 0 || n < m.retryAt {
		return false
	}
	if m.ttl > 0 {
		ttl = m.ttl
	}
	f := 1 + w.jitter*(2*rand.Float64()-1)
	if float64(left) > w.ratio*float64(ttl)*f {
		return false
	}
	if _, busy := w.refreshing[key]; busy {
		return false
	}
	select {
	case w.slots <- struct{}{}:
	default:
		w.skipped.Add(1)
		return false
	}
	w.refreshing[key] = struct{}{}
	w.started.Add(1)
	return true
}

// Done releases key's refresh; a failed refresh delays the next one.
func (w *State) Done(key string, now time.Time, failed bool) {
	w.mu.Lock()
	delete(w.refreshing, key)
	if failed {
		w.failed.Add(1)
		if m, ok := w.meta[key]; ok {
			m.retryAt = now.Add(RetryAfter).UnixNano()
			w.meta[key] = m
		}
	}
	w.mu.Unlock()
	<-w.slots
}

// Go runs refresh in its own goroutine, counted so that Wait waits for it,
// and reports whether it did: once Wait was called it starts nothing.
func (w *State) Go(refresh func()) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return false
	}
	w.wg.Go(refresh)
	return true
}

// Wait stops Go from starting refreshes and waits for every refresh it
// started.
func (w *State) Wait() {
	w.mu.Lock()
	w.stopped = true
	w.mu.Unlock()
	w.wg.Wait()
}

// Stats counts refreshes started, failed, and skipped because every slot
// was busy.
type Stats struct{ Started, Failed, Skipped uint64 }

// Stats returns the refresh counters.
func (w *State) Stats() Stats {
	return Stats{Started: w.started.Load(), Failed: w.failed.Load(), Skipped: w.skipped.Load()}
}

// Refreshing returns how many keys are being refreshed now.
func (w *State) Refreshing() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.refreshing)
}
