package cachekit

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// DefaultInvalidationChannel is the Redis pub/sub channel Invalidation uses
// unless told otherwise.
const DefaultInvalidationChannel = "cachekit:invalidate"

// Invalidation keeps the L1s of Clients that share a Redis coherent: every
// Set, Delete, MSet and SWR refresh publishes the written key on Channel,
// and every subscribed Client drops that key from its L1, so its next read
// goes to Redis. A Client that loses its subscription (Redis restart,
// network failure) clears its whole L1 once it is subscribed again, since it
// may have missed messages meanwhile. Messages name the full Redis key
// (prefix included): the key is already stored in that Redis in the clear,
// so publishing it there reveals nothing new. Values never travel on the
// channel.
type Invalidation struct {
	// Channel is the pub/sub channel. All Clients that must see each other's
	// writes use the same one. Default: DefaultInvalidationChannel.
	Channel string
}

func (o *Invalidation) validate() error {
	if strings.ContainsAny(o.Channel, "\r\n") {
		return configErr("Invalidation.Channel contains a line break")
	}
	return nil
}

// invalidationMagic starts every message: format version 1.
const invalidationMagic = "ck1 "

// subscribeWait bounds how long New waits for the first subscription
// confirmation. If Redis is not reachable by then, New returns anyway; the
// subscription keeps trying and clears L1 when it succeeds.
const subscribeWait = 2 * time.Second

type invalidator struct {
	channel string
	source  string // random per Client: "ck1 <source> " prefixes our messages
	prefix  []byte
	sub     *l2.Subscription

	received, applied, flushes, publishFailures atomic.Uint64
}

func newInvalidator(o *Invalidation) *invalidator {
	var id [8]byte
	_, _ = rand.Read(id[:])
	iv := &invalidator{channel: o.Channel, source: hex.EncodeToString(id[:])}
	if iv.channel == "" {
		iv.channel = DefaultInvalidationChannel
	}
	iv.prefix = []byte(invalidationMagic + iv.source + " ")
	return iv
}

// message is the invalidation of fullKey: "ck1 <source-id> <full key>".
func (iv *invalidator) message(fullKey string) []byte {
	return append(append(make([]byte, 0, len(iv.prefix)+len(fullKey)), iv.prefix...), fullKey...)
}

// parseInvalidation splits a message into its source id and full key.
func parseInvalidation(p []byte) (source, fullKey string, ok bool) {
	rest, found := bytes.CutPrefix(p, []byte(invalidationMagic))
	if !found {
		return "", "", false
	}
	src, key, found := bytes.Cut(rest, []byte{' '})
	if !found || len(src) == 0 {
		return "", "", false
	}
	return string(src), string(key), true
}

// startInvalidation subscribes c to its channel when c has both tiers.
func (c *Client) startInvalidation() error {
	if c.inv == nil || c.l1 == nil || c.l2 == nil {
		return nil
	}
	sub, err := c.l2.Subscribe(c.inv.channel, l2.SubscriptionHandler{
		Message: c.onInvalidation,
		Lost: func(err error) {
			c.warn("invalidation subscription lost; L1 is cleared when it is back", "", err)
		},
		Resubscribed: c.flushL1,
	})
	if err != nil {
		return err
	}
	c.inv.sub = sub
	t := time.NewTimer(subscribeWait)
	defer t.Stop()
	select {
	case <-sub.Ready():
	case <-t.C:
	}
	return nil
}

// onInvalidation drops the key another Client wrote from this Client's L1.
func (c *Client) onInvalidation(p []byte) {
	src, full, ok := parseInvalidation(p)
	if !ok || src == c.inv.source {
		return
	}
	c.inv.received.Add(1)
	key, ok := strings.CutPrefix(full, c.prefix)
	if !ok {
		return // another application's key space
	}
	c.l1.Delete(key)
	if c.swr != nil {
		c.swr.forget(key)
	}
	c.inv.applied.Add(1)
	c.met.invalidation(context.Background())
}

// flushL1 clears L1 after a lost subscription came back.
func (c *Client) flushL1() {
	c.l1.Clear()
	if c.swr != nil {
		c.swr.forgetAll()
	}
	c.inv.flushes.Add(1)
}

// publishMsg returns the invalidation message for key, nil when off.
func (c *Client) publishMsg(key string) []byte {
	if c.inv == nil {
		return nil
	}
	return c.inv.message(c.fullKey(key))
}

// InvalidationStats is a snapshot of the invalidation counters.
type InvalidationStats struct {
	// Received counts other Clients' messages; Applied those for this
	// Client's key prefix (their L1 entry was dropped).
	Received, Applied uint64
	// Flushes counts L1 clears after a lost subscription came back.
	Flushes uint64
	// PublishFailures counts writes whose invalidation could not be
	// published (the value itself was stored).
	PublishFailures uint64
}

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil.
func (c *Client) InvalidationStats() InvalidationStats {
	if c.inv == nil {
		return InvalidationStats{}
	}
	return InvalidationStats{
		Received:        c.inv.received.Load(),
		Applied:         c.inv.applied.Load(),
		Flushes:         c.inv.flushes.Load(),
		PublishFailures: c.inv.publishFailures.Load(),
	}
}
