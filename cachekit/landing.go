package cachekit

// The landing path: what a load yields and where it lands. Every load
// (GetOrLoad's, an SWR refresh's, an MGetOrLoad batch's) runs its loader
// through loadStep (loadMany for a batch) and gets one typed result
// (loaded, made by result: a value, or a "not found" this Client caches
// with Options.NegativeTTL, sealed as a negative entry). Every result
// reaches Redis and L1 here and nowhere else: landKey seals it, takes the
// key's ticket, stores it by its fill (the conditional write its claim
// earned: lease.go), admits it to L1 and counts what happened, or gives
// the claim back; landBatch does the same for a batch in one pipelined
// round trip. A new way of storing a loaded value is a new fill kind: its
// l2 call and the reading of its answer, in fillL2 and fillMany.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// loaded is what one load yields for a key, through the landing path to
// its flight and its callers: the value v, or gone, a "not found" this
// Client caches (the loader's, or a negative entry found where the load
// looked: it lands as a negative entry, and gone is what the callers
// get), and at, an instant at which it was known current: when the
// loader started (the source said so after that), or just before the
// script that read or stored it was sent. Zero at means none is known (a
// load stored or found in L1-only or interop mode; one not stored there,
// FailOpen's, carries its start): every caller that joined its flight
// takes it. result makes every loaded value.
type loaded[V any] struct {
	v    V
	gone error
	at   time.Time
}

// result is the one place a load's result is made, from what the loader
// returned (or what a load found stored: a value, or a *NegativeHitError)
// at at: v; a "not found" this Client caches (cachesAbsence) as gone; any
// other error as the load's failure.
func result[V any](c *Client, v V, err error, at time.Time) (loaded[V], error) {
	if err != nil && !c.cachesAbsence(err) {
		return loaded[V]{}, err
	}
	return loaded[V]{v: v, gone: err, at: at}, nil
}

// loadStep is the loader step every mode runs (GetOrLoad's, with or
// without a lease, and an SWR refresh): run the loader (runLoader) and
// make its result, current when the loader started, with the TTL to store
// it for.
func loadStep[V any](ctx context.Context, c *Client, load func(context.Context) (V, error), ttl time.Duration) (loaded[V], time.Duration, error) {
	started := time.Now()
	v, ttl, err := runLoader(ctx, c, load, ttl)
	res, err := result(c, v, err, started)
	return res, ttl, err
}

// loadMany is loadStep of a batch: one run of loader for keys, and a
// result per key; a key the loader left out is not found (cached as an
// absence when this Client caches negatives, else left out).
func loadMany[V any](ctx context.Context, c *Client, keys []string, loader func(context.Context, []string) (map[string]V, error)) (map[string]loaded[V], time.Duration, error) {
	started := time.Now()
	vals, ttl, err := runLoader(ctx, c, func(ctx context.Context) (map[string]V, error) { return loader(ctx, keys) }, c.defaultTTL)
	if err != nil {
		return nil, 0, err
	}
	res := make(map[string]loaded[V], len(keys))
	for _, k := range keys {
		v, ok := vals[k]
		var missing error
		if !ok {
			missing = ErrNotFound
		}
		if r, err := result(c, v, missing, started); err == nil {
			res[k] = r
		}
	}
	return res, ttl, nil
}

// runLoader runs load (flight.Load: OverrideTTL can reach its ctx, its
// error is marked as the loader's) in the loader's span, counted in
// Stats.Loads and, when it fails, Stats.LoadErrors, and returns its value
// with the TTL to store it for: ttl, or the loader's override; for a "not
// found" this Client caches, the negative TTL (negativeTTL).
func runLoader[T any](ctx context.Context, c *Client, load func(context.Context) (T, error), ttl time.Duration) (v T, _ time.Duration, err error) {
	c.stats.Loads.Add(1)
	ctx, done := c.obs.StartLoad(ctx, isNotFound)
	defer func() {
		if r := recover(); r != nil {
			done(flight.Panicked(r))
			panic(r) // the caller recovers it as before
		}
		done(err)
	}()
	v, override, err := flight.Load(ctx, load, 0) // 0: no override
	switch {
	case err != nil && c.cachesAbsence(err):
		ttl = c.negativeTTL(override)
	case override != 0:
		ttl = override
	}
	if err != nil {
		c.stats.LoadErrors.Add(1)
	}
	return v, ttl, err
}

// normalizeTTL applies the protocol's TTL rules.
func normalizeTTL(ttl time.Duration) (time.Duration, error) { return protocol.NormalizeTTL(ttl) }

// fillKind is how a loaded value may be written to Redis.
type fillKind int

const (
	// fillNone: not at all; the result goes only to the load's callers
	// (FailOpen with Redis failing, a lease Redis refused, a key under
	// another Client's lease this Client does not wait for).
	fillNone fillKind = iota
	// fillPlain: L1-only mode, where L1 is the store.
	fillPlain
	// fillAbsent: only where the key holds nothing (SET NX), or the entry
	// whose digest is replace (one that could not be opened). Interop
	// mode's loads: its keys are shared with other SDKs, which know no
	// placeholder, so a load cannot hold a lease; it still never
	// overwrites a write (this Client's or anyone's) made while it ran,
	// except a write that lands in the instant between the load's read
	// and a key with nothing in it.
	fillAbsent
	// fillLease: only while the key holds the load's lease (l2.Fill). The
	// lease's renewer runs until Redis has answered.
	fillLease
	// fillDigest: only while the key holds the entry that was served: the
	// bytes whose digest is replace and, when known, the absolute expiry
	// expiry (an SWR refresh; a write of the same bytes since then sets a
	// new expiry, so it is not taken for the served entry).
	fillDigest
)

// fill is how one loaded value is stored.
type fill struct {
	kind    fillKind
	lease   string // fillLease: the load's lease
	replace string // fillAbsent, fillDigest: digest of the entry it may replace
	// seq, in interop mode (Client.order set), is the key's write
	// sequence read before the load: a fillAbsent store goes only while
	// no write of this Client's began since (keyorder.go).
	seq     uint64
	expiry  int64             // fillDigest: the served entry's PEXPIRETIME (Unix ms), 0 unknown
	ver     l1.Version        // fillDigest: the key's L1 version when it was served (a write since drops the fill)
	renewer *ctxwait.Repeater // fillLease: renews the lease until the fill answered (keepLeases)
	unlock  func()            // fillAbsent: releases interop mode's {key}:lock once landed; nil without one
}

// giveBack releases what f holds on key when nothing will be stored by it
// (its load failed or panicked, or its value cannot be sealed): the
// lease's renewer and the lease (waiters need not wait it out), and
// interop mode's lock.
func (f fill) giveBack(ctx context.Context, c *Client, key string) {
	f.renewer.Stop()
	if f.kind == fillLease {
		c.releaseLease(ctx, c.fullKey(key), f.lease)
	}
	if f.unlock != nil {
		f.unlock()
	}
}

// landing is what became of a landed value.
type landing int

const (
	landStored landing = iota // Redis (L1 in L1-only mode) took it
	landLost                  // a write of the key came first; it stays
	landFailed                // it could not be sealed or stored: warned, not cached
)

// landKey stores res, the result of a load of key (or, when failed is
// not nil, its failure), for ttl by f, and returns what the load's
// callers get: res, with the instant it was last known current (as
// loaded says: just before the fill was sent when it stored, else when the
// loader started; none when stored in L1-only or interop mode), or failed,
// after f gave its claim back. A result is sealed (gone as a negative entry),
// written to Redis by f's kind, then to L1 through the ticket taken
// before the write (as Set does), and SWR told of a value's expiry. A
// failure to seal or store is warned about and the callers still get res
// (loadStoreFailed; ErrClosed is returned), except a refresh's
// (fillDigest), which is returned for the refresh to report.
func landKey[V any](ctx context.Context, c *Client, key string, res loaded[V], ttl time.Duration, f fill, failed error) (loaded[V], error) {
	if f.unlock != nil {
		defer f.unlock()
	}
	if failed != nil {
		f.giveBack(ctx, c, key)
		return res, failed
	}
	if f.kind == fillNone || f.kind == fillDigest && c.l1 != nil && c.l1.Version(key) != f.ver {
		return res, nil // not stored; a refresh that a newer write overtook drops its value
	}
	ttl, err := normalizeTTL(ttl)
	var stored []byte
	if err == nil {
		stored, err = c.sealEntry(ctx, key, res.v, res.gone != nil, ttl)
	}
	out, at := landFailed, time.Time{}
	if err != nil {
		f.giveBack(ctx, c, key)
	} else {
		out, at, err = c.storeLoaded(ctx, key, stored, ttl, f, res.gone == nil)
	}
	if f.kind != fillDigest {
		err = c.loadStoreFailed(key, err)
	}
	switch {
	case f.kind != fillLease:
		res.at = time.Time{}
	case out == landStored && err == nil:
		res.at = at
	}
	return res, err
}

// storeLoaded writes stored, the sealed result of a load of key, to Redis by
// f's kind (any but fillNone), then to L1 through the ticket taken before
// the write, SWR told of its expiry when track (a value, not a negative
// entry). It reports what became of it, and the time just before the
// write left.
func (c *Client) storeLoaded(ctx context.Context, key string, stored []byte, ttl time.Duration, f fill, track bool) (landing, time.Time, error) {
	t := c.ticket(key)
	at := time.Now()
	if c.l2 == nil {
		c.accepted(key, t, stored, ttl, track)
		return landStored, at, nil
	}
	var ok bool
	var err error
	if f.kind == fillAbsent && c.order != nil {
		_, err = c.order.store(key, f.seq, func() (err error) {
			ok, err = c.fillL2(ctx, key, stored, ttl, f)
			return err
		})
	} else {
		ok, err = c.fillL2(ctx, key, stored, ttl, f)
	}
	f.renewer.Stop() // Redis answered: the lease is used or lost
	switch {
	case err != nil:
		c.dropL1(key)           // Redis state unknown
		f.giveBack(ctx, c, key) // waiters need not wait the lease out
		return landFailed, at, err
	case !ok:
		c.stats.LeasesLost.Add(1) // a write came first: it stays
		return landLost, at, nil
	}
	c.accepted(key, t, stored, ttl, track)
	return landStored, at, nil
}

// loadStoreFailed is what a load returns for err, landKey's failure to seal
// or store key's loaded value: ErrClosed as it is, else nil after a
// warning (the load's callers get their value anyway).
func (c *Client) loadStoreFailed(key string, err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	c.warn("a load could not store the loaded value", key, err)
	return nil
}

// fillL2 writes stored under key for ttl by f's kind (fillAbsent, fillLease
// or fillDigest), under the reliability stack, and reports whether Redis
// stored it.
func (c *Client) fillL2(ctx context.Context, key string, stored []byte, ttl time.Duration, f fill) (bool, error) {
	full := c.fullKey(key)
	var ok bool
	// Each kind's landing destroys its own condition (the lease, the
	// digest, the absence), so one whose outcome is unknown is resent.
	// Sealed bytes are this call's alone (a fresh nonce): a resend that
	// finds them was stored by its first attempt. Bytes others may write
	// tell nothing, and a resend that does not store leaves the outcome
	// open.
	own := c.enc != nil
	err := c.redisResend(ctx, "set", len(stored), func(ctx context.Context, resend bool) (err error) {
		again := resend && own
		switch f.kind {
		case fillLease:
			ok, err = c.l2.Fill(ctx, full, f.lease, stored, ttl, again)
		case fillDigest:
			ok, err = c.l2.SetIfDigest(ctx, full, f.replace, f.expiry, stored, ttl, again)
		default: // fillAbsent
			if f.replace != "" {
				ok, err = c.l2.SetIfDigest(ctx, full, f.replace, 0, stored, ttl, again)
			} else {
				ok, err = c.l2.SetCond(ctx, full, stored, ttl, false, again)
			}
		}
		if err == nil && !ok && resend && !own {
			err = l2.OutcomeUnknown("set", errResentNotStored)
		}
		return err
	})
	return ok, err
}

// errResentNotStored is the cause of a resent conditional write of bytes
// others may write that found its condition gone: its first attempt may
// have stored the value, or someone else wrote the key.
var errResentNotStored = errors.New("cachekit: a resent write found its condition gone; its first attempt may have stored it")

// landBatch lands a batch load's results (claimed by cl, loaded by
// loadMany; failed: the loader failed, and cl is given back) and returns
// every key's result, cl's prior ones included: as landKey does, in one
// pipelined round trip, for ttl (absences for Options.NegativeTTL): with
// leases, each key cl holds a lease on while the lease holds (a key the
// loader left out with nothing to cache gives its lease back at once; the
// keys under other Clients' leases are not stored), else only where its
// key holds nothing (interop mode), or in L1. Batches are not tracked by
// SWR. A result whose value cannot be sealed, or whose store fails, has
// its lease released and is warned about; the error is ErrClosed or nil.
func landBatch[V any](ctx context.Context, c *Client, cl batchClaim[V], vals map[string]loaded[V], ttl time.Duration, failed error) (map[string]loaded[V], error) {
	if failed != nil {
		cl.giveBack(ctx, c)
		return nil, failed
	}
	res := cl.prior
	var keys []string // the keys to store, in cl.load's order
	for _, k := range cl.load {
		r, ok := vals[k]
		if ok {
			if cl.kind != fillLease {
				r.at = time.Time{} // none known without a lease
			}
			res[k] = r
		}
		switch _, held := cl.leases[k]; {
		case cl.kind == fillLease && !held:
		case !ok && held: // left out by the loader: nothing to cache, give the key back
			cl.release(ctx, c, k)
		case ok:
			keys = append(keys, k)
		}
	}
	ttl, err := normalizeTTL(ttl)
	var batch []l2.Item
	var leases, at []string // each batch entry's lease and key
	size := 0
	for _, k := range keys {
		var stored []byte
		itemTTL := ttl
		if res[k].gone != nil {
			itemTTL = c.negTTL
		}
		if err == nil {
			stored, err = c.sealEntry(ctx, k, res[k].v, res[k].gone != nil, itemTTL)
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				cl.renewer.Stop()
				return nil, err
			}
			c.warn("a batch load could not store a loaded value", k, err)
			cl.release(ctx, c, k)
			err = nil
			continue
		}
		batch = append(batch, l2.Item{Key: c.fullKey(k), Value: stored, TTL: itemTTL})
		leases, at = append(leases, cl.leases[k]), append(at, k)
		size += len(stored)
	}
	if len(batch) == 0 {
		cl.renewer.Stop()
		return res, nil
	}
	tickets := make([]ticket, len(at))
	for j, k := range at {
		tickets[j] = c.ticket(k)
	}
	sent := time.Now()
	done, errs, err := c.fillMany(ctx, batch, leases, cl.kind, size)
	cl.renewer.Stop() // the fills answered
	for j, k := range at {
		switch {
		case errs[j] != nil:
			c.dropL1(k)
			if errors.Is(errs[j], ErrClosed) {
				return nil, errs[j]
			}
			if err == nil {
				c.stats.L2Errors.Add(1) // one item's failure; the round trip's is counted by redis
			}
			c.warn("a batch load could not store the loaded values", k, errs[j])
			cl.release(ctx, c, k)
		case !done[j]:
			c.stats.LeasesLost.Add(1)
		default:
			if cl.kind == fillLease {
				r := res[k]
				r.at = sent
				res[k] = r
			}
			c.accepted(k, tickets[j], batch[j].Value, batch[j].TTL, false)
		}
	}
	return res, nil
}

// fillMany writes a batch by kind in one pipeline under the reliability
// stack: done[j] reports whether item j was stored, errs[j] its error.
// Every item failing is the round trip failing (counted, retried when
// transient; err is its error); a single item's failure is its own.
func (c *Client) fillMany(ctx context.Context, batch []l2.Item, leases []string, kind fillKind, size int) (done []bool, errs []error, err error) {
	if c.l2 == nil || kind == fillPlain { // L1-only mode: accepted writes L1
		return slices.Repeat([]bool{true}, len(batch)), make([]error, len(batch)), nil
	}
	err = c.redis(ctx, "mset", size, func(ctx context.Context) error {
		if kind == fillLease {
			done, errs = c.l2.FillMany(ctx, batch, leases)
		} else {
			done, errs = c.l2.SetAbsentMany(ctx, batch)
		}
		if !slices.Contains(errs, nil) {
			return errs[0]
		}
		return nil
	})
	if errs == nil { // refused before any attempt
		done, errs = make([]bool, len(batch)), slices.Repeat([]error{err}, len(batch))
	}
	return done, errs, err
}

// releaseLease gives the key back (deletes the lease if still there),
// within one attempt's bound whatever ctx says; the lease expires anyway.
// On the auto-pipelined stream it goes after the Acquire that planted the
// lease, and a fence keeps it after one whose connection failed.
func (c *Client) releaseLease(ctx context.Context, full, lease string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.rel.AttemptTimeout())
	defer cancel()
	_, _ = c.l2.Release(rctx, full, lease)
}

// batchClaim is what an MGetOrLoad batch holds before its loader runs:
// the results found stored meanwhile (prior), the keys to load, the fill
// kind their results are stored by, and, with leases, the lease this batch
// planted on each key it holds (the keys under another Client's lease, or
// whose lease could not be planted, are loaded and not stored) with their
// renewer.
type batchClaim[V any] struct {
	prior   map[string]loaded[V]
	load    []string
	kind    fillKind
	leases  map[string]string
	renewer *ctxwait.Repeater
}

// giveBack releases the leases cl holds (its load failed or panicked);
// nil leases hold none.
func (cl batchClaim[V]) giveBack(ctx context.Context, c *Client) {
	cl.renewer.Stop()
	for k := range cl.leases {
		cl.release(ctx, c, k)
	}
}

// release gives back key's lease, if cl holds one: a result of the batch
// that will not be stored.
func (cl batchClaim[V]) release(ctx context.Context, c *Client, key string) {
	if lease, ok := cl.leases[key]; ok {
		c.releaseLease(ctx, c.fullKey(key), lease)
	}
}

// negativeTTL is the TTL of a loader's cached "not found": its override
// (capped at MaxNegativeTTL), or Options.NegativeTTL.
func (c *Client) negativeTTL(override time.Duration) time.Duration {
	if override > 0 {
		return min(override, MaxNegativeTTL)
	}
	return c.negTTL
}
