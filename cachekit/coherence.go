package cachekit

// L1 coherence: every path that writes L1 after a Redis round trip (Set,
// MSet, GetOrLoad's store, the SWR refresh, Get and MGet backfills) takes a
// ticket before the round trip and writes L1 through admit afterwards.
//
// The ticket holds the key's L1 version. Set, Delete, an invalidation and
// Clear all advance it, so a write whose round trip overlapped any of them
// does not land: a reader's backfill is then simply skipped (whoever moved
// the version left L1 right), and a writer drops the key from L1, since the
// overlapping write may have reached Redis after its own. The ticket also
// says whether L1 may be written at all: with invalidation on, not while
// tracking is down (see invalidation.go). The version is read before the
// tracking state, and tracking loss clears L1 (advancing every version)
// after it marks itself down, so a write that saw tracking up cannot land
// once tracking went down.
//
// An L1 entry never outlives its Redis entry: its lifetime is the TTL sent
// to (or read from) Redis, counted from when the ticket was taken, before
// the command left.

import (
	"time"

	"github.com/cachekit-io/cachekit-go/l1"
)

// ticket is what an L1 write after a Redis round trip needs from before it.
type ticket struct {
	ver    l1.Version
	at     time.Time
	ok     bool // L1 may be written (tracking up, or invalidation off)
	direct bool // L1-only mode: L1 is the store, writes are unconditional
}

// ticket returns key's ticket. It reads the clock, so only paths that write
// L1 take one.
func (c *Client) ticket(key string) ticket {
	if c.l1 == nil {
		return ticket{}
	}
	if c.l2 == nil {
		return ticket{direct: true}
	}
	ver := c.l1.Version(key)
	return ticket{ver: ver, at: c.now(), ok: c.inv == nil || c.inv.tracking.Load()}
}

// admit stores sealed bytes in L1 for ttl counted from t, if nothing wrote,
// deleted or invalidated key since t was taken. A writer (whose bytes are
// now in Redis) that cannot admit drops the key from L1 instead, counted in
// Stats.L1Rejected. It reports whether L1 took the bytes.
func (c *Client) admit(key string, t ticket, stored []byte, ttl time.Duration, writer bool) bool {
	if t.direct {
		if c.l1.Set(key, stored, ttl) {
			return true
		}
		c.stats.l1Rejected.Add(1)
		return false
	}
	if left := ttl - c.now().Sub(t.at); t.ok && left > 0 && c.l1.SetIfVersion(key, stored, left, t.ver) {
		return true
	}
	if writer {
		c.stats.l1Rejected.Add(1)
		c.dropL1(key)
	}
	return false
}

// dropL1 removes key from L1 (advancing its version) and forgets its SWR
// expiry.
func (c *Client) dropL1(key string) {
	if c.l1 != nil {
		c.l1.Delete(key)
	}
	if c.swr != nil {
		c.swr.Forget(key)
	}
}
