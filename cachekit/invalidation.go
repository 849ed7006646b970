package cachekit

import (
	"cmp"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// DefaultInvalidationChannel is the Redis pub/sub channel Invalidation uses
// unless told otherwise.
const DefaultInvalidationChannel = "cachekit:invalidate"

// DefaultFallbackL1Lifetime is the longest an L1 entry lives while Redis
// refuses CLIENT TRACKING, unless Invalidation.FallbackL1Lifetime says
// otherwise.
const DefaultFallbackL1Lifetime = time.Second

// Invalidation keeps L1 coherent with Redis whoever writes it: this
// Client, other Clients, the other CacheKit SDKs, the command-line tool,
// redis-cli, expiry, eviction, FLUSHDB.
//
// The Client keeps one connection per Redis node (each master of a
// Cluster) in Redis's broadcasting client-side-caching mode (CLIENT
// TRACKING ON BCAST PREFIX <KeyPrefix>, Redis 6 or later), and drops from
// L1 every key Redis reports written, deleted, expired or evicted; FLUSHDB
// and FLUSHALL clear L1. The Client's own writes come back too and drop the
// entry they just wrote, so the next read of a key written in this process
// goes to Redis once.
//
// While the Client cannot vouch that it hears every write (a tracking
// connection was lost, or went silent for about a second: it pings every
// 250 ms), L1 is cleared and not written: reads go to Redis, and under
// FailOpen an unreachable Redis is a miss, never an L1 value that may be
// stale. Once every node is tracked again L1 fills as usual.
//
// Every write of this Client (Set, MSet, Delete, SetIfAbsent/Present,
// Touch, GetOrLoad's store, SWR refreshes, Raw's Delete, DeleteMatching
// and Swap) also announces the written key on Channel as "ck1 <source>
// <full Redis key>" (the key is already stored in that Redis in the clear;
// values never travel), for Clients whose Redis refuses tracking.
//
// Where Redis refuses tracking (an ACL without CLIENT TRACKING, a managed
// service that removed CLIENT), the Client says so once in a warning, in
// InvalidationStats.Mode and in the cachekit.invalidation.mode metric, and
// falls back: it subscribes to Channel and drops each key another Client
// announces (mode "pubsub"), and keeps no L1 entry longer than
// FallbackL1Lifetime. Writers that announce reach L1 within the pub/sub
// delivery time; writers that do not (redis-cli, other SDKs, expiry,
// eviction) within FallbackL1Lifetime. Losing the subscription clears L1
// as losing tracking does. Where SUBSCRIBE is refused too (a Redis 7 ACL
// user has no channel rights by default), FallbackL1Lifetime is the only
// bound (mode "lifetime"). On a Cluster a PUBLISH travels over the cluster
// bus and may reach the subscribed node before a SET it announces, sent to
// another node, is applied there: the pub/sub bound then holds from when
// the writer's call returned, and a read racing it is bounded by
// FallbackL1Lifetime. The Client tries tracking again every 30 s and
// returns to it (and stops subscribing) once Redis allows it.
type Invalidation struct {
	// Channel is the pub/sub channel writes are announced on, and the one
	// the fallback subscribes to. Every Client sharing keys must use the
	// same. Default: DefaultInvalidationChannel.
	Channel string

	// FallbackL1Lifetime bounds how long an L1 entry lives while Redis
	// refuses tracking: the staleness bound for writers that do not
	// announce. Default: 0, which New treats as DefaultFallbackL1Lifetime.
	FallbackL1Lifetime time.Duration

	// RequireTracking forbids the fallback. When Redis refuses tracking
	// within New's wait (about a second), New fails with an error matching
	// ErrConfig. When Redis is unreachable at New, New returns the Client
	// as usual (it cannot tell); a refusal first seen later is logged at
	// error level, and L1 stays cleared and bypassed until Redis allows
	// tracking. Default: false (fall back).
	RequireTracking bool

	// NoAnnounce stops announcing writes on Channel: set it only when every
	// Client sharing the keys tracks (nobody listens then), to save the
	// PUBLISH each write costs. A Client with it whose Redis refuses
	// tracking does not subscribe (no peer announces either) and bounds L1
	// by FallbackL1Lifetime alone. Default: false.
	NoAnnounce bool
}

func (o *Invalidation) validate() error {
	switch {
	case strings.ContainsAny(o.Channel, "\r\n"):
		return configErr("Invalidation.Channel contains a line break")
	case o.FallbackL1Lifetime < 0:
		return configErr("Invalidation.FallbackL1Lifetime is negative")
	}
	return nil
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

	logged                                       [2]atomic.Bool // refusal of tracking, of subscribe
	received, applied, flushes, losses, refusals atomic.Uint64
	publishFailures                              atomic.Uint64
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
	t := time.NewTimer(trackingWait)
	defer t.Stop()
	select {
	case <-co.Settled():
	case <-t.C:
	}
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
		if prev != l2.ModeNone {
			c.inv.losses.Add(1)
			c.warn("invalidation "+prev.String()+" lost; L1 bypassed until it is back", "", why)
		}
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

// refused logs a refusal loudly, once per mechanism for the Client's life,
// and counts every one.
func (c *Client) refused(what string, err error) {
	c.inv.refusals.Add(1)
	i, level := 0, slog.LevelWarn
	msg := "cachekit: redis refuses CLIENT TRACKING (an ACL without +client|tracking, or a managed service): " +
		"L1 now hears only cachekit-go writers, through pub/sub on the invalidation channel, and keeps entries " +
		"at most fallback_l1_lifetime, the bound for other writers (redis-cli, other SDKs, expiry); allow CLIENT ID " +
		"and CLIENT TRACKING for this user to restore full coherence, or set Invalidation.RequireTracking to fail New instead"
	switch {
	case what != "tracking":
		i = 1
		msg = "cachekit: redis refuses SUBSCRIBE to the invalidation channel (an ACL user without channel rights): " +
			"L1 entries live at most fallback_l1_lifetime, and no write reaches L1 sooner; grant the channel " +
			"(ACL SETUSER <user> &<channel>) to restore the pub/sub fallback"
	case c.inv.strict:
		level = slog.LevelError
		msg = "cachekit: redis refuses CLIENT TRACKING and Invalidation.RequireTracking is set: L1 is bypassed " +
			"until redis allows CLIENT ID and CLIENT TRACKING for this user"
	case !c.inv.announce:
		msg = "cachekit: redis refuses CLIENT TRACKING and Invalidation.NoAnnounce is set: L1 entries live at most " +
			"fallback_l1_lifetime, and no write reaches L1 sooner; allow CLIENT ID and CLIENT TRACKING for this user"
	}
	if !c.inv.logged[i].CompareAndSwap(false, true) {
		return
	}
	c.log.LogAttrs(context.Background(), level, msg, slog.String("cause", err.Error()),
		slog.String("channel", c.inv.channel), slog.Duration("fallback_l1_lifetime", c.inv.lifetime))
}

// onInvalidation drops the keys reported written from L1; nil means every
// key.
func (c *Client) onInvalidation(fullKeys []string) {
	c.inv.received.Add(1)
	if fullKeys == nil {
		c.flushL1()
		c.leaseWaits.Wake("", true)
		return
	}
	for _, full := range fullKeys {
		key, ok := strings.CutPrefix(full, c.prefix)
		if !ok {
			continue
		}
		c.dropL1(key)
		c.leaseWaits.Wake(key, false)
		c.inv.applied.Add(1)
		c.obs.Invalidation(context.Background())
	}
}

// flushL1 clears L1 and what SWR knows.
func (c *Client) flushL1() {
	c.l1.Clear()
	if c.swr != nil {
		c.swr.ForgetAll()
	}
	c.inv.flushes.Add(1)
}

// InvalidationStats is a snapshot of the invalidation counters.
type InvalidationStats struct {
	// Mode names what keeps L1 coherent now: "tracking" (every write is
	// heard), "pubsub" (tracking refused: announced writes are heard, L1
	// entries live at most FallbackL1Lifetime), "lifetime" (tracking and
	// the subscription refused: FallbackL1Lifetime alone) or "none" (L1
	// bypassed: starting, lost, or refused under RequireTracking).
	Mode string
	// Tracking reports whether every Redis node is tracked now (Mode
	// "tracking").
	Tracking bool
	// Received counts invalidation messages; Applied the keys under this
	// Client's prefix they dropped from L1.
	Received, Applied uint64
	// Flushes counts L1 clears: FLUSHDB/FLUSHALL, and each loss of tracking
	// or of the fallback's subscription.
	Flushes uint64
	// Losses counts the times tracking or the subscription was lost.
	Losses uint64
	// Refusals counts the times Redis refused tracking or the fallback's
	// SUBSCRIBE (each is retried every 30 s).
	Refusals uint64
	// PublishFailures counts writes whose announcement could not be
	// published (the value itself was stored).
	PublishFailures uint64
}

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil.
func (c *Client) InvalidationStats() InvalidationStats {
	if c.inv == nil {
		return InvalidationStats{}
	}
	m := l2.Mode(c.inv.mode.Load())
	return InvalidationStats{
		Mode:            m.String(),
		Tracking:        m == l2.ModeTracking,
		Received:        c.inv.received.Load(),
		Applied:         c.inv.applied.Load(),
		Flushes:         c.inv.flushes.Load(),
		Losses:          c.inv.losses.Load(),
		Refusals:        c.inv.refusals.Load(),
		PublishFailures: c.inv.publishFailures.Load(),
	}
}
