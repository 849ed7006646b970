package cachekit

// Values stored from a []byte, read back without msgpack's copy.

import (
	"context"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/internal/codec"
	"github.com/cachekit-io/cachekit-go/internal/observe"
)

// AppendValue appends the []byte value stored under key to dst and returns
// the extended slice. With encryption on and an L1 hit it allocates nothing
// when dst has room. The value must have been stored from a []byte
// (otherwise ErrNotBytes).
func (c *Client) AppendValue(ctx context.Context, dst []byte, key string) ([]byte, error) {
	return c.appendValue(ctx, observe.OpAppendValue, dst, key, true)
}

// appendValue is AppendValue observed as op; with bin false it appends the
// whole msgpack payload, whatever it holds (Raw.AppendPayload).
func (c *Client) appendValue(ctx context.Context, op observe.Op, dst []byte, key string, bin bool) ([]byte, error) {
	ctx, oc := c.obs.Begin(ctx, op, key, 1)
	s := getScratch()
	// The remaining TTL is needed only to bound an L1 backfill: without L1
	// a plain GETRANGE saves Redis a PTTL per read.
	payload, tier, _, err := c.loadTTL(ctx, s, key, c.l1 != nil, nil)
	if err == nil && !bin {
		dst = chunked.Append(dst, payload)
	} else if err == nil {
		if raw, ok := codec.Bin(payload); ok {
			dst = chunked.Append(dst, raw)
		} else {
			err = &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: ErrNotBytes}
		}
	}
	putScratch(s)
	if oc != nil {
		c.obs.End(ctx, oc, observe.Result{Tier: observe.TierNamed(string(tier)), Size: len(payload)}, err)
	}
	return dst, err
}

// GetBytes returns a copy of the []byte value stored under key.
func (c *Client) GetBytes(ctx context.Context, key string) ([]byte, error) {
	out, err := c.appendValue(ctx, observe.OpGetBytes, nil, key, true)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}
