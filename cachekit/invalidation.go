package cachekit

// Invalidation at run time: New starts tracking (or its fallback) here,
// and what it hears drops L1 copies and wakes lease waiters; what it is
// configured with is Options.Invalidation (options.go), what it counted
// InvalidationStats (stats.go).

import (
	"context"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/coherence"
)

// trackingWait bounds how long New waits for tracking (or its fallback) to
// be in place. New returns sooner when Redis refuses the connection;
// either way L1 stays unused until then.
const trackingWait = time.Second

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
