package cachekit

import (
	"cmp"
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/coherence"
)

// DefaultInvalidationChannel is the Redis pub/sub channel Invalidation uses
// unless told otherwise.
const DefaultInvalidationChannel = "cachekit:invalidate"

// DefaultFallbackL1Lifetime is Invalidation.FallbackL1Lifetime's default.
const DefaultFallbackL1Lifetime = time.Second

// Invalidation keeps L1 coherent with Redis whoever writes it (this and
// other Clients, other SDKs, the command-line tool, redis-cli, expiry,
// eviction, FLUSHDB); docs/production.md states the bound per writer.
//
// The Client keeps a connection per Redis node (each master of a Cluster)
// in broadcasting tracking mode (CLIENT TRACKING ON BCAST PREFIX
// <KeyPrefix>, Redis 6+) and drops from L1 every key Redis reports
// written, expired or evicted (its own writes too); FLUSHDB and FLUSHALL
// clear L1. While it cannot vouch that it hears every write (a connection
// lost, or silent for about a second), L1 is cleared and bypassed.
//
// Every write of a Client (Set, MSet, Delete, SetIfAbsent/Present, Touch,
// GetOrLoad's store, SWR refreshes, Raw's Delete, DeleteMatching and Swap)
// also publishes "ck1 <source> <full Redis key>" on Channel (the key is in
// that Redis in the clear already; values never travel). Where Redis
// refuses tracking (ACL, managed service), the Client logs it once, shows
// it in InvalidationStats.Mode and the cachekit.invalidation.mode metric,
// and falls back: it subscribes to Channel and drops the keys other
// Clients announce (mode "pubsub"; losing the subscription clears L1), and
// keeps no L1 copy older than FallbackL1Lifetime, the bound for writers
// that do not announce; a key read in the last quarter of its copy's
// lifetime is read from Redis again in the background (once per key at a
// time) and its copy renewed, so a hot key stays in L1. Where SUBSCRIBE is
// refused too, that lifetime is the only bound (mode "lifetime"). It tries
// tracking again every 30 s.
type Invalidation struct {
	// Channel is the pub/sub channel writes are announced on and the
	// fallback listens to; Clients sharing keys must agree on it.
	// Default: DefaultInvalidationChannel.
	Channel string

	// FallbackL1Lifetime bounds an L1 entry's life while Redis refuses
	// tracking. Default: 0, which New treats as DefaultFallbackL1Lifetime.
	FallbackL1Lifetime time.Duration

	// RequireTracking forbids the fallback: a refusal within New's wait
	// (about a second) makes New fail with an error matching ErrConfig.
	// When Redis is unreachable at New, New returns the Client as usual; a
	// refusal first seen later is logged at error level, and L1 stays
	// cleared and bypassed until Redis allows tracking. Default: false.
	RequireTracking bool

	// NoAnnounce stops the announcements, saving a PUBLISH per write: set
	// it only when every Client sharing the keys tracks. Refused tracking
	// then leaves FallbackL1Lifetime alone (mode "lifetime"): no peer
	// announces. Default: false.
	NoAnnounce bool
}

// trackingWait bounds how long New waits for tracking (or its fallback) to
// be in place. New returns sooner when Redis refuses the connection;
// either way L1 stays unused until then.
const trackingWait = time.Second

// renew keeps a hot key in L1 under the fallback's lifetime: a hit in the
// last quarter of its entry's lifetime reads the entry from Redis in the
// background (one read per key at a time) and, once it authenticates,
// gives the L1 copy a fresh lifetime through the ticket taken before the
// read, as any backfill (the read is bounded by AttemptTimeout on its own,
// outside the reliability stack's slots): a write, delete or announcement meanwhile wins,
// and no copy is older than the lifetime. Without it a hot key misses once
// per lifetime.
func (c *Client) renew(key string, life time.Duration) {
	if left, ok := c.l1.Remaining(key); !ok || left > life/4 {
		return
	}
	c.inv.Renew(key, func() {
		ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
		defer cancel()
		t := c.ticket(key)
		var stored []byte
		var ttl time.Duration
		// Outside the reliability stack: a renewal is no caller's work and
		// takes none of the callers' MaxInFlight slots; ctx bounds it.
		if c.getCall(c.fullKey(key), true, false, &stored, &ttl)(ctx) != nil || ttl <= 0 {
			return
		}
		s := getScratch()
		if _, err := c.open(ctx, s, key, stored); err == nil {
			c.admit(key, t, stored, ttl, false)
		}
		putScratch(s)
	})
}

// newInvalidator returns the invalidation state of o, with its defaults.
func newInvalidator(o *Invalidation) *coherence.State {
	return coherence.New(cmp.Or(o.Channel, DefaultInvalidationChannel), !o.NoAnnounce,
		cmp.Or(o.FallbackL1Lifetime, DefaultFallbackL1Lifetime), o.RequireTracking)
}

// startInvalidation starts tracking (or its fallback) when c has both
// tiers, and waits up to trackingWait for it.
func (c *Client) startInvalidation() error {
	if c.inv == nil || c.l1 == nil || c.l2 == nil {
		return nil
	}
	channel := c.inv.Channel
	if !c.inv.Announce {
		channel = ""
	}
	co, err := coherence.Start(c.l2, c.prefix, channel, !c.inv.Strict, coherence.Handler{
		Invalidate: c.onInvalidation, Mode: c.modeChanged,
		Refused: func(what string, err error) { c.inv.Refused(c.log, what, err) },
	})
	if err != nil {
		return err
	}
	c.inv.Co = co
	co.Await(trackingWait)
	if err := co.TrackingRefused(); err != nil && c.inv.Strict {
		return configErrFrom("Invalidation.RequireTracking: redis refuses CLIENT TRACKING", err)
	}
	return nil
}

// modeChanged applies a change of what keeps L1 coherent. Losing it stops
// L1 writes, then clears L1: from here until a mode is back, L1 holds
// nothing it cannot vouch for. The order matters (see write.go).
func (c *Client) modeChanged(m coherence.Mode, why error) {
	prev := c.inv.SetMode(m)
	switch m {
	case coherence.ModeNone:
		c.flushL1()
		c.leaseWaits.Wake("", true) // waiters poll from here on
		c.warn("invalidation "+prev.String()+" lost; L1 bypassed until it is back", "", why)
	case coherence.ModeTracking, coherence.ModePubSub:
		c.rel.Answered()  // a connection answering is evidence Redis is back
		c.markerLost(nil) // a restart, no invalidation sent, may have lost it
	}
}

// onInvalidation drops the keys reported written from L1; nil: every key.
func (c *Client) onInvalidation(keys []string) {
	c.markerLost(keys)
	if keys == nil {
		c.flushL1()
		c.leaseWaits.Wake("", true)
	}
	for _, key := range keys {
		c.dropL1(key)
		c.leaseWaits.Wake(key, false)
		c.obs.Invalidation(context.Background())
	}
}

// flushL1 clears L1 and what SWR knows.
func (c *Client) flushL1() {
	c.l1.Clear()
	if c.swr != nil {
		c.swr.ForgetAll()
	}
}

// InvalidationStats is a snapshot of the invalidation counters.
type InvalidationStats struct {
	// Mode names what keeps L1 coherent now: "tracking" (every node
	// tracked: every write of every writer is heard), "pubsub" (tracking
	// refused: the writes Clients announce are heard), "lifetime"
	// (tracking and the subscription refused: the copies' bounded
	// lifetime alone), or "none" (copies not kept: starting, lost, or
	// refused without a fallback).
	Mode string
	// Tracking reports whether Mode is "tracking".
	Tracking bool
	// Received counts invalidation messages; Applied the keys under the
	// prefix they reported, dropped from L1.
	Received, Applied uint64
	// Flushes counts the times every copy had to go: FLUSHDB/FLUSHALL or
	// an unreadable message, and each loss.
	Flushes uint64
	// Losses counts the times tracking or the subscription was lost (a
	// change to "none" from another mode).
	Losses uint64
	// Refusals counts the times Redis refused tracking or the fallback's
	// SUBSCRIBE: once per mechanism until it is up again (the retries
	// every 30 s meanwhile are not counted).
	Refusals uint64
	// PublishFailures counts the announcements of this Client's writes
	// that could not be published (the writes went through).
	PublishFailures uint64
}

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil, and only PublishFailures without L1.
func (c *Client) InvalidationStats() InvalidationStats {
	switch {
	case c.inv == nil:
		return InvalidationStats{}
	case c.inv.Co == nil:
		return InvalidationStats{Mode: coherence.ModeNone.String(), PublishFailures: c.l2.PublishFailures()}
	}
	st := c.inv.Co.Stats()
	return InvalidationStats{Mode: st.Mode, Tracking: st.Tracking, Received: st.Received, Applied: st.Applied,
		Flushes: st.Flushes, Losses: st.Losses, Refusals: st.Refusals, PublishFailures: st.PublishFailures}
}
