package cachekit

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// DefaultInvalidationChannel is the Redis pub/sub channel Invalidation uses
// unless told otherwise.
const DefaultInvalidationChannel = "cachekit:invalidate"

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
// For Clients of earlier releases, which listen on a pub/sub channel
// instead, every Set, Delete, MSet and SWR refresh also publishes the
// written key on Channel (full Redis key; the key is already stored in that
// Redis in the clear, so publishing it there reveals nothing new; values
// never travel). This Client does not subscribe to it: tracking already
// reports those writes.
type Invalidation struct {
	// Channel is the pub/sub channel writes are published on for earlier
	// releases. Default: DefaultInvalidationChannel.
	Channel string
}

func (o *Invalidation) validate() error {
	if strings.ContainsAny(o.Channel, "\r\n") {
		return configErr("Invalidation.Channel contains a line break")
	}
	return nil
}

// trackingWait bounds how long New waits for tracking to be in place. New
// returns sooner when Redis refuses the connection; either way L1 stays
// unused until tracking is up.
const trackingWait = time.Second

type invalidator struct {
	channel string // writes are announced there (l2.Store.AnnounceWrites)
	tracker *l2.Tracker
	// tracking is true while every node is tracked: L1 may be written.
	tracking atomic.Bool

	received, applied, flushes, losses, publishFailures atomic.Uint64
}

// startInvalidation starts tracking when c has both tiers, and waits up to
// trackingWait for it.
func (c *Client) startInvalidation() error {
	if c.inv == nil || c.l1 == nil || c.l2 == nil {
		return nil
	}
	tr, err := c.l2.Track(c.prefix, l2.TrackingHandler{
		Invalidate: c.onInvalidation,
		Down:       c.trackingDown,
		Up:         c.trackingUp,
	})
	if err != nil {
		return err
	}
	c.inv.tracker = tr
	t := time.NewTimer(trackingWait)
	defer t.Stop()
	select {
	case <-tr.Settled():
	case <-t.C:
	}
	return nil
}

// trackingUp lets L1 be written again. Tracking connections answering is
// also evidence that Redis is back: an open breaker closes.
func (c *Client) trackingUp() {
	c.inv.tracking.Store(true)
	c.rel.Answered()
}

// onInvalidation drops the keys Redis reports written from L1; nil means
// every key.
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

// trackingDown stops L1 writes, then clears L1: from here until tracking is
// back, L1 holds nothing it cannot vouch for. The order matters (see
// write.go).
func (c *Client) trackingDown(err error) {
	c.inv.tracking.Store(false)
	c.flushL1()
	c.leaseWaits.Wake("", true) // waiters poll from here on
	c.inv.losses.Add(1)
	c.warn("invalidation tracking lost; L1 bypassed until it is back", "", err)
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
	// Tracking reports whether every Redis node is tracked now (L1 is in
	// use); false while tracking is being established or was lost.
	Tracking bool
	// Received counts invalidation messages; Applied the keys under this
	// Client's prefix they dropped from L1.
	Received, Applied uint64
	// Flushes counts L1 clears: FLUSHDB/FLUSHALL, and each loss of tracking.
	Flushes uint64
	// Losses counts the times tracking was lost.
	Losses uint64
	// PublishFailures counts writes whose pub/sub message (for earlier
	// releases) could not be published (the value itself was stored).
	PublishFailures uint64
}

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil.
func (c *Client) InvalidationStats() InvalidationStats {
	if c.inv == nil {
		return InvalidationStats{}
	}
	return InvalidationStats{
		Tracking:        c.inv.tracking.Load(),
		Received:        c.inv.received.Load(),
		Applied:         c.inv.applied.Load(),
		Flushes:         c.inv.flushes.Load(),
		Losses:          c.inv.losses.Load(),
		PublishFailures: c.inv.publishFailures.Load(),
	}
}
