package cachekit

// The landing path. Every value a loader returns (GetOrLoad's, an SWR
// refresh's, an MGetOrLoad batch's), and every "not found" a Client with
// Options.NegativeTTL caches (an absence, sealed as a negative entry:
// negative.go), reaches Redis and L1 here and nowhere else: land seals it,
// takes the key's ticket, stores it by its fill (the conditional write its
// load earned), admits it to L1 and counts what happened; landBatch does
// the same for a batch in one pipelined round trip. A new way of storing a
// loaded value is a new fill kind: its l2 call and the reading of its
// answer, in fillL2 and fillMany.

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// fillKind is how a loaded value may be written to Redis.
type fillKind int

const (
	// fillPlain: L1-only mode, where L1 is the store.
	fillPlain fillKind = iota
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
	expiry  int64    // fillDigest: the served entry's PEXPIRETIME (Unix ms), 0 unknown
	renewer *renewer // fillLease: keeps the lease until the fill answered
}

// landing is what became of a landed value.
type landing int

const (
	landStored landing = iota // Redis (L1 in L1-only mode) took it
	landLost                  // a write of the key came first; it stays
	landFailed                // it could not be sealed or stored: warned, not cached
)

// land stores v, loaded for key, for ttl by f: sealed (an absence as a
// negative entry), written to Redis by f's kind, then to L1 through the
// ticket taken before the write (as Set does), and SWR told of its expiry
// (tracking the key when track; never a negative entry). It
// reports what became of it, and the time just before the write left (when
// v was last known current). A lease fill's lease is released when the
// value cannot be stored. The error says why it could not be sealed or
// stored (ErrClosed among them): a load warns about it (loadStoreFailed)
// and its callers still get v; a refresh reports it.
func (c *Client) land(ctx context.Context, key string, v any, ttl time.Duration, f fill, track bool) (landing, time.Time, error) {
	ttl, err := normalizeTTL(ttl)
	stored, neg := []byte(nil), false
	if err == nil {
		stored, neg, err = c.sealLoaded(ctx, key, v, ttl)
	}
	track = track && !neg
	if err != nil {
		f.renewer.stop()
		if f.kind == fillLease {
			c.releaseLease(ctx, c.fullKey(key), f.lease)
		}
		return landFailed, time.Time{}, err
	}
	t := c.ticket(key)
	at := time.Now()
	if c.l2 == nil {
		c.accepted(key, t, stored, ttl, track)
		return landStored, at, nil
	}
	var ok bool
	if f.kind == fillAbsent && c.order != nil {
		_, err = c.order.store(key, f.seq, func() (err error) {
			ok, err = c.fillL2(ctx, key, stored, ttl, f)
			return err
		})
	} else {
		ok, err = c.fillL2(ctx, key, stored, ttl, f)
	}
	f.renewer.stop() // Redis answered: the lease is used or lost
	switch {
	case err != nil:
		c.dropL1(key) // Redis state unknown
		if f.kind == fillLease {
			c.releaseLease(ctx, c.fullKey(key), f.lease) // waiters need not wait it out
		}
		return landFailed, at, err
	case !ok:
		c.stats.LeasesLost.Add(1) // a write came first: it stays
		return landLost, at, nil
	}
	c.accepted(key, t, stored, ttl, track)
	return landStored, at, nil
}

// sealLoaded seals what a load returned for key: a value as Set seals it,
// an absence as a negative entry living ttl (neg true).
func (c *Client) sealLoaded(ctx context.Context, key string, v any, ttl time.Duration) (stored []byte, neg bool, err error) {
	if _, neg = v.(absence); neg {
		stored, err = c.sealNegative(ctx, key, ttl)
	} else {
		stored, err = c.sealValue(ctx, key, v)
	}
	return stored, neg, err
}

// loadStoreFailed is what a load returns for err, land's failure to seal
// or store key's loaded value: ErrClosed as it is, else nil after a
// warning (the load's callers get their value anyway).
func (c *Client) loadStoreFailed(key string, err error) error {
	if err == nil || errors.Is(err, ErrClosed) {
		return err
	}
	c.warn("GetOrLoad could not store the loaded value", key, err)
	return nil
}

// fillL2 writes stored under key for ttl by f's kind (any but fillPlain),
// under the reliability stack, and reports whether Redis stored it.
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

// batchItem is one loaded value of a batch (or an absence: a key the
// loader left out, cached as not found) and how it may be stored.
type batchItem struct {
	key   string
	v     any
	lease string // fillLease's lease; "" in a fillAbsent batch
}

// landBatch stores a batch's loaded values for ttl (its absences for
// Options.NegativeTTL) in one pipelined round trip: each item while its key still holds its lease (kind fillLease), or
// only where its key holds nothing (fillAbsent, interop mode), or plainly
// in L1-only mode; then L1 as land does (batches are not tracked by SWR).
// It returns, per item, what became of it and when its value was last
// known current. An item whose value cannot be sealed, or whose store
// fails, has its lease released; the error is ErrClosed or nil (failures
// are warned about).
func (c *Client) landBatch(ctx context.Context, items []batchItem, ttl time.Duration, kind fillKind) ([]landing, []time.Time, error) {
	out := make([]landing, len(items))
	ats := make([]time.Time, len(items))
	ttl, err := normalizeTTL(ttl)
	var batch []l2.Item
	var leases []string
	var at []int // the index in items of each batch entry
	size := 0
	for i, it := range items {
		var stored []byte
		itemTTL := ttl
		if _, neg := it.v.(absence); neg {
			itemTTL = c.negTTL
		}
		if err == nil {
			stored, _, err = c.sealLoaded(ctx, it.key, it.v, itemTTL)
		}
		if err != nil {
			if errors.Is(err, ErrClosed) {
				return nil, nil, err
			}
			c.warn("MGetOrLoad could not store a loaded value", it.key, err)
			c.giveBack(ctx, it)
			out[i], err = landFailed, nil
			continue
		}
		batch = append(batch, l2.Item{Key: c.fullKey(it.key), Value: stored, TTL: itemTTL})
		leases, at = append(leases, it.lease), append(at, i)
		size += len(stored)
	}
	if len(batch) == 0 {
		return out, ats, nil
	}
	tickets := make([]ticket, len(at))
	for j, i := range at {
		tickets[j] = c.ticket(items[i].key)
	}
	sent := time.Now()
	done, errs, err := c.fillMany(ctx, batch, leases, kind, size)
	for j, i := range at {
		it := items[i]
		switch {
		case errs[j] != nil:
			c.dropL1(it.key)
			if errors.Is(errs[j], ErrClosed) {
				return nil, nil, errs[j]
			}
			if err == nil {
				c.stats.L2Errors.Add(1) // one item's failure; the round trip's is counted by redis
			}
			c.warn("MGetOrLoad could not store the loaded values", it.key, errs[j])
			c.giveBack(ctx, it)
			out[i] = landFailed
		case !done[j]:
			c.stats.LeasesLost.Add(1)
			out[i] = landLost
		default:
			out[i], ats[i] = landStored, sent
			c.accepted(it.key, tickets[j], batch[j].Value, batch[j].TTL, false)
		}
	}
	return out, ats, nil
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

// giveBack releases the lease of a batch item that will not be stored.
func (c *Client) giveBack(ctx context.Context, it batchItem) {
	if it.lease != "" {
		c.releaseLease(ctx, c.fullKey(it.key), it.lease)
	}
}
