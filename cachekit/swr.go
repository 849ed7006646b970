package cachekit

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/observe"
	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/l2"
)

// SWR configures stale-while-revalidate in GetOrLoad: an entry close to
// its expiry is returned at once and reloaded in the background, so hot keys
// do not all miss together when they expire. Entries are never served past
// their TTL. A zero field takes its default.
type SWR struct {
	// Ratio: an entry is refreshed once its remaining TTL is at most
	// Ratio × TTL × a jitter factor (TTL is the ttl GetOrLoad was called
	// with). Must be within [0, 1). Default: 0.5.
	Ratio float64

	// Jitter spreads the refresh point of each check over
	// [1-Jitter, 1+Jitter] × Ratio × TTL so a fleet does not refresh a hot
	// key in lockstep. Must be within [0, 0.5]. Default: 0.1.
	Jitter float64

	// MaxRefreshes bounds the background refreshes running at once; a due
	// entry found while all are busy is served and tried again on a later
	// read. There is never more than one refresh per key. Default: 10.
	MaxRefreshes int
}

// SWR defaults.
const (
	defaultSWRRatio        = 0.5
	defaultSWRJitter       = 0.1
	defaultSWRMaxRefreshes = 10
	// swrMaxTracked bounds the keys whose expiry is remembered; past it,
	// new keys are not tracked (they expire and miss as without SWR).
	swrMaxTracked = 1 << 16
	// swrRetryAfter is how long a key whose refresh failed waits before
	// the next attempt.
	swrRetryAfter = time.Second
)

func (w *SWR) validate() error {
	switch {
	case w.Ratio < 0 || w.Ratio >= 1:
		return configErr("SWR.Ratio must be within [0, 1)")
	case w.Jitter < 0 || w.Jitter > 0.5:
		return configErr("SWR.Jitter must be within [0, 0.5]")
	case w.MaxRefreshes < 0:
		return configErr("SWR.MaxRefreshes is negative")
	}
	return nil
}

// swrMeta is what the Client remembers about a GetOrLoad key: when it
// expires in L2 and the TTL it was stored with.
type swrMeta struct {
	expires int64 // unix nanos, by the Client's clock
	ttl     time.Duration
	retryAt int64 // no refresh before this (after a failed one)
}

type swrState struct {
	ratio, jitter float64
	slots         chan struct{}

	mu         sync.Mutex
	meta       map[string]swrMeta
	refreshing map[string]struct{}

	wg              sync.WaitGroup
	started, failed atomic.Uint64
	skipped         atomic.Uint64
}

func newSWR(o *SWR) *swrState {
	if o == nil {
		return nil
	}
	w := &swrState{ratio: o.Ratio, jitter: o.Jitter}
	if w.ratio == 0 {
		w.ratio = defaultSWRRatio
	}
	if w.jitter == 0 {
		w.jitter = defaultSWRJitter
	}
	n := o.MaxRefreshes
	if n == 0 {
		n = defaultSWRMaxRefreshes
	}
	w.slots = make(chan struct{}, n)
	w.meta = make(map[string]swrMeta)
	w.refreshing = make(map[string]struct{})
	return w
}

// record remembers that key expires remaining from now and was stored
// with ttl.
func (w *swrState) record(key string, now time.Time, remaining, ttl time.Duration) {
	if remaining <= 0 {
		return
	}
	exp := now.Add(remaining).UnixNano()
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.meta[key]; !ok && len(w.meta) >= swrMaxTracked {
		n := now.UnixNano()
		for k, m := range w.meta {
			if m.expires <= n {
				delete(w.meta, k)
			}
		}
		if len(w.meta) >= swrMaxTracked {
			return
		}
	}
	w.meta[key] = swrMeta{expires: exp, ttl: ttl}
}

// observe is record for an entry read from Redis: it keeps the full
// lifetime learned when this process stored the entry (which a loader's
// OverrideTTL may have set) over the ttl of the call that read it.
func (w *swrState) observe(key string, now time.Time, remaining, ttl time.Duration) {
	w.mu.Lock()
	if m, ok := w.meta[key]; ok && m.ttl > 0 {
		ttl = m.ttl
	}
	w.mu.Unlock()
	w.record(key, now, remaining, ttl)
}

// rewritten updates a tracked key after a plain Set stored it for ttl.
func (w *swrState) rewritten(key string, now time.Time, ttl time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if m, ok := w.meta[key]; ok {
		m.expires, m.retryAt = now.Add(ttl).UnixNano(), 0
		w.meta[key] = m
	}
}

// forget drops what is known about key (Delete, invalidation).
func (w *swrState) forget(key string) {
	w.mu.Lock()
	delete(w.meta, key)
	w.mu.Unlock()
}

// forgetAll drops everything (L1 flush).
func (w *swrState) forgetAll() {
	w.mu.Lock()
	clear(w.meta)
	w.mu.Unlock()
}

// claim reports whether key is due for a refresh, and if so reserves the
// key's single refresh and a refresh slot; the caller must then call done.
func (w *swrState) claim(key string, now time.Time, ttl time.Duration) bool {
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

// done releases key's refresh; a failed refresh delays the next one.
func (w *swrState) done(key string, now time.Time, failed bool) {
	w.mu.Lock()
	delete(w.refreshing, key)
	if failed {
		w.failed.Add(1)
		if m, ok := w.meta[key]; ok {
			m.retryAt = now.Add(swrRetryAfter).UnixNano()
			w.meta[key] = m
		}
	}
	w.mu.Unlock()
	<-w.slots
}

// getSWR is GetOrLoad's read when SWR is on: it reads like Get, learns the
// entry's expiry from L2 when it came from there, and starts a background
// refresh when the entry is due.
func getSWR[T any](ctx context.Context, c *Client, key string, ttl time.Duration, load func(context.Context) (T, error)) (T, observe.Result, error) {
	var zero, v T
	var ver l1.Version
	if c.l1 != nil {
		ver = c.l1.Version(key)
	}
	s := getScratch()
	var served []byte // the sealed entry read: a refresh replaces exactly these bytes, or nothing
	payload, tier, remaining, err := c.loadTTL(ctx, s, key, true, &served)
	r := observe.Result{Tier: observe.TierNamed(string(tier)), Size: len(payload)}
	if err == nil {
		if derr := c.decode(payload, &v); derr != nil {
			err = &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: derr}
		}
	}
	putScratch(s)
	if err != nil {
		return zero, r, err
	}
	now := c.now()
	if tier == TierL2 {
		c.swr.observe(key, now, remaining, ttl)
		if c.l1 != nil {
			ver = c.l1.Version(key) // after our own backfill
		}
	}
	if c.swr.claim(key, now, ttl) {
		if tier == TierL1 {
			// The bytes L1 served; if a write replaced them since, the
			// version check drops the refresh anyway.
			served, _ = c.l1.Get(key)
		}
		c.obs.Event(ctx, "cachekit.swr_refresh")
		c.startRefresh(ctx, key, ttl, ver, served, func(rctx context.Context) (any, error) { return load(rctx) })
	}
	return v, r, nil
}

// startRefresh reloads key in the background. It keeps ctx's values but
// not its cancellation; it ends after LoadTimeout, and Close cancels it
// (and waits for it).
func (c *Client) startRefresh(ctx context.Context, key string, ttl time.Duration, ver l1.Version, served []byte, load func(context.Context) (any, error)) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
	stop := context.AfterFunc(c.bg, cancel)
	c.swr.wg.Add(1)
	go func() {
		defer c.swr.wg.Done()
		defer stop()
		defer cancel()
		err := c.refresh(rctx, key, ttl, ver, served, load)
		c.swr.done(key, c.now(), err != nil)
		c.obs.SWRRefresh(rctx, err == nil)
		if err != nil && c.bg.Err() == nil {
			c.warn("SWR refresh failed; serving the stale entry until it expires", key, err)
		}
	}()
}

// refresh runs the loader and stores its value: L2 first, only if Redis
// still holds the very entry that was served (served, compared by digest
// in the script that writes: a Set, Delete, lease or any other write of the
// key since the read makes the refresh a no-op, whoever made it), then L1
// through admit, as Set does (and not at all if this process saw a write,
// delete or invalidation of the key since the read).
func (c *Client) refresh(ctx context.Context, key string, ttl time.Duration, ver l1.Version, served []byte, load func(context.Context) (any, error)) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = errLoaderPanic(r)
		}
	}()
	if served == nil {
		return nil // the entry left L1 before it could be read back: nothing to compare
	}
	c.stats.loads.Add(1)
	v, ttl, err := runLoader(ctx, c, load, ttl)
	if err != nil {
		c.stats.loadErrors.Add(1)
		return err
	}
	ttl, err = normalizeTTL(ttl)
	if err != nil {
		return err
	}
	stored, err := c.sealValue(ctx, key, v)
	if err != nil {
		return err
	}
	t := c.ticket(key)
	if c.l1 != nil && t.ver != ver {
		return nil // a newer write won; drop ours
	}
	var swapped bool
	err = c.rel.DoSized(ctx, "set", len(stored), func(ctx context.Context) error {
		channel, msg := "", []byte(nil)
		if c.inv != nil {
			channel, msg = c.inv.channel, c.publishMsg(key)
		}
		var err error
		swapped, err = c.l2.SetIfDigest(ctx, c.fullKey(key), l2.Digest(served), stored, ttl, channel, msg)
		return err
	})
	if err != nil {
		c.dropL1(key) // Redis state unknown
		return err
	}
	if !swapped {
		c.stats.leaseLost.Add(1) // a write came first: it stays
		return nil
	}
	c.swr.record(key, c.now(), ttl, ttl)
	if c.l1 != nil {
		c.admit(key, t, stored, ttl, true)
	}
	return nil
}
