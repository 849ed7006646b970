package cachekit

import (
	"cmp"
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
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

type invalidator struct {
	channel  string // writes are announced there (l2.Store.AnnounceWrites)
	announce bool
	lifetime time.Duration // the fallback's L1 lifetime
	strict   bool          // Options.Invalidation.RequireTracking
	co       *l2.Coherence
	// l1cap is what a ticket reads: -1 while L1 may not be written, 0 in
	// tracking mode, else the longest an L1 entry may live, in ns.
	l1cap atomic.Int64
	mode  atomic.Int32 // l2.Mode
	// renewing holds the keys whose L1 lifetime a background read is
	// renewing (renew); renewals counts those reads, which stopRenewals
	// waits for. stopped (under mu) refuses new ones from then on, so no
	// read is added while Close waits or starts after it.
	renewing sync.Map
	renewals sync.WaitGroup
	mu       sync.Mutex
	stopped  bool
}

// renew keeps a hot key in L1 under the fallback's lifetime: a hit in the
// last quarter of its entry's lifetime reads the entry from Redis in the
// background (one read per key at a time) and, once it authenticates,
// gives the L1 copy a fresh lifetime through the ticket taken before the
// read, as any backfill: a write, delete or announcement meanwhile wins,
// and no copy is older than the lifetime. Without it a hot key misses once
// per lifetime.
func (c *Client) renew(key string, life time.Duration) {
	if left, ok := c.l1.Remaining(key); !ok || left > life/4 {
		return
	}
	if _, busy := c.inv.renewing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	c.inv.mu.Lock()
	defer c.inv.mu.Unlock()
	if c.inv.stopped {
		return
	}
	c.inv.renewals.Go(func() {
		defer c.inv.renewing.Delete(key)
		ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
		defer cancel()
		t := c.ticket(key)
		var stored []byte
		var ttl time.Duration
		if c.redis(ctx, "get", 0, c.getCall(c.fullKey(key), true, &stored, &ttl)) != nil || ttl <= 0 {
			return
		}
		s := getScratch()
		if _, err := c.open(ctx, s, key, stored); err == nil {
			c.admit(key, t, stored, ttl, false)
		}
		putScratch(s)
	})
}

// stopRenewals refuses new renewals and waits for those running (Close).
func (inv *invalidator) stopRenewals() {
	inv.mu.Lock()
	inv.stopped = true
	inv.mu.Unlock()
	inv.renewals.Wait()
}

// heard returns the current mode; ModeNone when invalidation is off.
func (inv *invalidator) heard() l2.Mode {
	if inv == nil {
		return l2.ModeNone
	}
	return l2.Mode(inv.mode.Load())
}

func newInvalidator(o *Invalidation) *invalidator {
	inv := &invalidator{channel: cmp.Or(o.Channel, DefaultInvalidationChannel), announce: !o.NoAnnounce,
		lifetime: cmp.Or(o.FallbackL1Lifetime, DefaultFallbackL1Lifetime), strict: o.RequireTracking}
	inv.l1cap.Store(-1)
	return inv
}

// startInvalidation starts tracking (or its fallback) when c has both
// tiers, and waits up to trackingWait for it.
func (c *Client) startInvalidation() error {
	if c.inv == nil || c.l1 == nil || c.l2 == nil {
		return nil
	}
	channel := c.inv.channel
	if !c.inv.announce {
		channel = ""
	}
	co, err := c.l2.Cohere(c.prefix, channel, !c.inv.strict, l2.CoherenceHandler{
		Invalidate: c.onInvalidation, Mode: c.modeChanged, Refused: c.refused,
	})
	if err != nil {
		return err
	}
	c.inv.co = co
	co.Await(trackingWait)
	if err := co.TrackingRefused(); err != nil && c.inv.strict {
		return configErrFrom("Invalidation.RequireTracking: redis refuses CLIENT TRACKING", err)
	}
	return nil
}

// modeChanged applies a change of what keeps L1 coherent. Losing it stops
// L1 writes, then clears L1: from here until a mode is back, L1 holds
// nothing it cannot vouch for. The order matters (see write.go).
func (c *Client) modeChanged(m l2.Mode, why error) {
	prev := l2.Mode(c.inv.mode.Swap(int32(m)))
	switch m {
	case l2.ModeNone:
		c.inv.l1cap.Store(-1)
		c.flushL1()
		c.leaseWaits.Wake("", true) // waiters poll from here on
		c.warn("invalidation "+prev.String()+" lost; L1 bypassed until it is back", "", why)
		return
	case l2.ModeTracking:
		c.inv.l1cap.Store(0)
	default:
		c.inv.l1cap.Store(int64(c.inv.lifetime))
	}
	if m != l2.ModeLifetime {
		c.rel.Answered() // a connection answering is evidence Redis is back
	}
}

// refused logs a mechanism's first refusal loudly: its meaning, the remedy.
func (c *Client) refused(what string, err error) {
	level, msg := slog.LevelWarn, "redis refuses CLIENT TRACKING: L1 hears only writers that announce (cachekit-go) "+
		"and keeps entries at most fallback_l1_lifetime; allow CLIENT ID and CLIENT TRACKING for this user, "+
		"or set Invalidation.RequireTracking to fail New instead"
	switch {
	case what != "tracking":
		msg = "redis refuses SUBSCRIBE to the invalidation channel: L1 entries live at most fallback_l1_lifetime " +
			"and no other Client's write reaches L1 sooner; grant this user the channel (ACL SETUSER <user> &<channel>)"
	case c.inv.strict:
		level, msg = slog.LevelError, "redis refuses CLIENT TRACKING and Invalidation.RequireTracking is set: "+
			"L1 is bypassed until redis allows CLIENT ID and CLIENT TRACKING for this user"
	case !c.inv.announce:
		msg = "redis refuses CLIENT TRACKING and Invalidation.NoAnnounce is set: L1 entries live at most " +
			"fallback_l1_lifetime; allow CLIENT ID and CLIENT TRACKING for this user"
	}
	c.log.LogAttrs(context.Background(), level, "cachekit: "+msg, slog.String("cause", err.Error()),
		slog.String("channel", c.inv.channel), slog.Duration("fallback_l1_lifetime", c.inv.lifetime))
}

// onInvalidation drops the keys reported written from L1; nil: every key.
func (c *Client) onInvalidation(keys []string) {
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

// InvalidationStats is a snapshot of the invalidation counters; l2
// documents each field. Applied counts the keys dropped from L1.
type InvalidationStats = l2.CoherenceStats

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil, and only PublishFailures without L1.
func (c *Client) InvalidationStats() InvalidationStats {
	switch {
	case c.inv == nil:
		return InvalidationStats{}
	case c.inv.co == nil:
		return InvalidationStats{Mode: l2.ModeNone.String(), PublishFailures: c.l2.PublishFailures()}
	}
	return c.inv.co.Stats()
}
