package cachekit

import (
	"context"
	"fmt"
	"runtime"

	"golang.org/x/sync/semaphore"
)

// LargeValueBytes is the size from which sealing or opening a value counts
// as large work: a value whose encoded form, or an entry whose stored form,
// is at least this long. Options.LargeValueConcurrency bounds how many such
// seals and opens run at once. It is also where AES-GCM switches to sealing
// in 64 KiB chunks (about a quarter of a millisecond of work per 256 KiB on
// the dev machine).
const LargeValueBytes = 256 << 10

// largeSlots returns the semaphore bounding concurrent large work for
// Options.LargeValueConcurrency n, or nil for no bound.
func largeSlots(n int) *semaphore.Weighted {
	switch {
	case n < 0:
		return nil
	case n == 0:
		n = max(1, runtime.GOMAXPROCS(0)-1)
	}
	return semaphore.NewWeighted(int64(n))
}

// enterLarge takes a large-work slot when n bytes of work are large and
// the Client bounds large work, waiting at most as long as ctx allows. held
// says whether a slot was taken; leaveLarge(held) gives it back.
func (c *Client) enterLarge(ctx context.Context, n int) (held bool, err error) {
	if n < LargeValueBytes || c.large == nil {
		return false, nil
	}
	if c.enc != nil {
		// Derive the keys (or wait for the derivation in flight) before
		// taking a slot: a slot is for CPU work, not for waiting on a
		// KeyProvider, which would serialize the waits.
		if err := c.enc.Warm(ctx); err != nil {
			return false, c.mapErr(err)
		}
	}
	if err := c.large.Acquire(ctx, 1); err != nil {
		return false, fmt.Errorf("cachekit: waiting to seal or open a large value: %w", err)
	}
	if c.testHookLarge != nil {
		c.testHookLarge()
	}
	return true, nil
}

// leaveLarge gives back the slot enterLarge took, if it took one.
func (c *Client) leaveLarge(held bool) {
	if held {
		c.large.Release(1)
	}
}

// encodedLenHint is a lower bound of value's encoded length, known without
// encoding it for the types large values usually have, else 0. It lets a
// large []byte or string value wait for its slot before its copy into the
// payload, not after.
func encodedLenHint(value any) int {
	switch v := value.(type) {
	case []byte:
		return len(v)
	case string:
		return len(v)
	}
	return 0
}

// sealBounded is seal holding a large-work slot when payload is large.
func (c *Client) sealBounded(ctx context.Context, s *scratch, key string, payload []byte) ([]byte, error) {
	held, err := c.enterLarge(ctx, len(payload))
	if err != nil {
		return nil, err
	}
	defer c.leaveLarge(held)
	return c.seal(ctx, s, key, payload)
}

// openLarge is open holding a large-work slot (LargeValueConcurrency);
// its callers test the size inline, so a small entry pays one comparison.
func (c *Client) openLarge(ctx context.Context, s *scratch, key string, stored []byte) ([]byte, error) {
	held, err := c.enterLarge(ctx, len(stored))
	if err != nil {
		return nil, err
	}
	defer c.leaveLarge(held)
	return c.open(ctx, s, key, stored)
}
