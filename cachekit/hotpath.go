package cachekit

// The hot path, on one screen: Set seals (encode -> envelope -> AAD ->
// EncryptNow) and writes L2 then L1; Get reads L1, opens (DecryptNow ->
// envelope open -> bounded msgpack check) and decodes; on an L1 miss it
// reads L2, authenticates before admitting the bytes to L1, backfills L1 no
// longer than the entry's remaining TTL, and decodes. L1 only ever holds
// the same sealed bytes that L2 holds.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Set stores value under key for the Client's DefaultTTL.
func (c *Client) Set(ctx context.Context, key string, value any) error {
	ctx, oc := c.begin(ctx, opSet, key)
	r, err := c.setWithTTL(ctx, key, value, c.defaultTTL)
	c.end(ctx, oc, r, err)
	return err
}

// SetWithTTL stores value under key for ttl. ttl must be positive and at
// most 30 days; sub-second TTLs are rounded up to one second. The value is
// encoded with msgpack (canonical msgpack in interop mode). L2 is written
// first, then L1 (only if no other write, delete or invalidation of key
// overlapped; otherwise L1 drops key). Once SetWithTTL returns nil, a Get in
// this process returns the new value or a later one, with two exceptions:
// under Reliability.FailOpen a nil return may mean Redis was unreachable and
// the write was absorbed (ReliabilityStats counts it as Degraded), and in
// L1-only mode L1 admission may reject it (Stats counts L1Rejected).
func (c *Client) SetWithTTL(ctx context.Context, key string, value any, ttl time.Duration) error {
	ctx, oc := c.begin(ctx, opSetWithTTL, key)
	r, err := c.setWithTTL(ctx, key, value, ttl)
	c.end(ctx, oc, r, err)
	return err
}

func (c *Client) setWithTTL(ctx context.Context, key string, value any, ttl time.Duration) (result, error) {
	if c.closed.Load() {
		return result{}, ErrClosed
	}
	ttl, err := protocol.NormalizeTTL(ttl)
	if err != nil {
		return result{}, err
	}
	stored, err := c.sealValue(ctx, key, value)
	if err != nil {
		return result{}, err
	}
	r, err := c.store(ctx, key, stored, ttl)
	r.size = len(stored)
	return r, err
}

// sealValue checks key, encodes value and seals it into a fresh slice.
func (c *Client) sealValue(ctx context.Context, key string, value any) ([]byte, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	// A large []byte or string takes its slot before its copy into the
	// payload; any other value once its encoded size is known.
	held, err := c.enterLarge(ctx, encodedLenHint(value))
	if err != nil {
		return nil, err
	}
	defer c.leaveLarge(held)
	s := getScratch()
	defer putScratch(s)
	payload, err := c.encode(s, value)
	if err != nil {
		return nil, err
	}
	if held {
		return c.seal(ctx, s, key, payload)
	}
	return c.sealBounded(ctx, s, key, payload)
}

// store writes sealed bytes to L2 then L1. The L1 write is conditional
// (see ticket): if another write, a delete or an invalidation of key
// overlapped the Redis round trip, L1 drops the key instead, since Redis may
// hold the other value. Under FailOpen a failed L2 write is absorbed (and L1
// dropped, so neither tier has the new value).
func (c *Client) store(ctx context.Context, key string, stored []byte, ttl time.Duration) (result, error) {
	t := c.ticket(key)
	r := result{tier: tierL1}
	if c.l2 != nil {
		r.tier = tierL2
		if err := c.writeL2(ctx, key, stored, ttl); err != nil {
			c.stats.l2Errors.Add(1)
			c.dropL1(key) // L2 state unknown: never serve the old value from L1
			if c.degradable(ctx, err) {
				c.stats.degraded.Add(1)
				c.warn("redis write failed; absorbed (fail-open)", key, err)
				return result{tier: tierL2, out: outDegraded}, nil
			}
			return r, err
		}
	}
	if c.l1 != nil {
		c.admit(key, t, stored, ttl, true)
	}
	if c.swr != nil {
		c.swr.rewritten(key, c.now(), ttl)
	}
	return r, nil
}

// writeL2 stores sealed bytes in Redis under the reliability stack and, with
// invalidation on, publishes the write in the same round trip. A failed
// publish is a warning: the value is stored.
func (c *Client) writeL2(ctx context.Context, key string, stored []byte, ttl time.Duration) error {
	full := c.fullKey(key)
	err := c.rel.doSized(ctx, "set", len(stored), func(ctx context.Context) error {
		if c.inv == nil {
			return c.l2.Set(ctx, full, stored, ttl)
		}
		return c.l2.SetPublish(ctx, full, stored, ttl, c.inv.channel, c.publishMsg(key))
	})
	if err == nil {
		return nil
	}
	var be *BackendError
	if errors.As(err, &be) && be.Op == "publish" {
		c.inv.publishFailures.Add(1)
		c.warn("invalidation not published after Set", key, err)
		return nil
	}
	return err
}

// Get decodes the value stored under key into dst, a non-nil pointer. It
// returns ErrNotFound when neither tier has the key.
func (c *Client) Get(ctx context.Context, key string, dst any) error {
	_, err := c.get(ctx, opGet, key, dst, false)
	return err
}

// get is Get and, with wantTTL, GetWithTTL, observed as op: it also
// returns how long the entry has left (L1's remaining time on an L1 hit,
// Redis's PTTL otherwise).
func (c *Client) get(ctx context.Context, op opID, key string, dst any, wantTTL bool) (time.Duration, error) {
	ctx, oc := c.begin(ctx, op, key)
	left, r, err := c.getPayload(ctx, key, dst, wantTTL)
	c.end(ctx, oc, r, err)
	return left, err
}

func (c *Client) getPayload(ctx context.Context, key string, dst any, wantTTL bool) (time.Duration, result, error) {
	if c.closed.Load() {
		return 0, result{}, ErrClosed
	}
	if v := reflect.ValueOf(dst); v.Kind() != reflect.Pointer || v.IsNil() {
		return 0, result{}, fmt.Errorf("%w (got %T)", ErrInvalidDestination, dst)
	}
	s := getScratch()
	defer putScratch(s)
	// The remaining TTL bounds an L1 backfill: without L1 (and unless the
	// caller wants it) a plain GET saves Redis a PTTL per read.
	payload, tier, left, err := c.loadTTL(ctx, s, key, wantTTL || c.l1 != nil)
	r := result{tier: tierOf(tier), size: len(payload)}
	if err != nil {
		return 0, r, err
	}
	if wantTTL && tier == TierL1 {
		// What L1 holds key for now (a write after the read above may
		// have replaced the entry: then it is the newer entry's).
		var ok bool
		if left, ok = c.l1.Remaining(key); !ok {
			return 0, result{}, ErrNotFound // expired or dropped since the read: a miss
		}
	}
	if err := c.decode(payload, dst); err != nil {
		return 0, r, &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err}
	}
	return left, r, nil
}

// AppendValue appends the []byte value stored under key to dst and returns
// the extended slice. With encryption on and an L1 hit it allocates nothing
// when dst has room. The value must have been stored from a []byte
// (otherwise ErrNotBytes).
func (c *Client) AppendValue(ctx context.Context, dst []byte, key string) ([]byte, error) {
	return c.appendValue(ctx, opAppendValue, dst, key)
}

// appendValue is AppendValue observed as op.
func (c *Client) appendValue(ctx context.Context, op opID, dst []byte, key string) ([]byte, error) {
	ctx, oc := c.begin(ctx, op, key)
	s := getScratch()
	// The remaining TTL is needed only to bound an L1 backfill: without L1
	// a plain GET saves Redis a PTTL per read.
	payload, tier, _, err := c.loadTTL(ctx, s, key, c.l1 != nil)
	r := result{tier: tierOf(tier), size: len(payload)}
	if err == nil {
		var raw []byte
		if raw, err = binPayload(payload); err != nil {
			err = &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err}
		} else {
			dst = chunked.Append(dst, raw)
		}
	}
	putScratch(s)
	c.end(ctx, oc, r, err)
	return dst, err
}

// GetBytes returns a copy of the []byte value stored under key.
func (c *Client) GetBytes(ctx context.Context, key string) ([]byte, error) {
	out, err := c.appendValue(ctx, opGetBytes, nil, key)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// loadTTL finds key's entry, opens it and returns its msgpack payload
// (which lives in s and is valid until s is returned to the pool), the tier
// that answered (on a miss or a Redis failure, the last tier asked) and,
// for an entry read from L2, its remaining TTL there (0
// for an L1 hit, no expiry, or when withTTL is false and only GET was
// sent). Reliability wraps the L2 round trip only; decrypt and decode run
// outside it.
func (c *Client) loadTTL(ctx context.Context, s *scratch, key string, withTTL bool) ([]byte, Tier, time.Duration, error) {
	if c.closed.Load() {
		return nil, "", 0, ErrClosed
	}
	if key == "" {
		return nil, "", 0, errEmptyKey
	}
	if c.l1 != nil {
		payload, hit, err := c.fromL1(ctx, s, key)
		if hit || err != nil {
			return payload, TierL1, 0, err
		}
	}
	if c.l2 == nil {
		return nil, TierL1, 0, ErrNotFound
	}
	t := c.ticket(key)
	var stored []byte
	var ttl time.Duration
	err := c.rel.do(ctx, "get", func(ctx context.Context) error {
		var err error
		if withTTL {
			stored, ttl, err = c.l2.GetWithTTL(ctx, c.fullKey(key))
		} else {
			stored, err = c.l2.Get(ctx, c.fullKey(key))
		}
		return err
	})
	if err != nil {
		return nil, TierL2, 0, c.readFailed(ctx, key, err)
	}
	payload, err := c.fromL2(ctx, s, key, stored, ttl, t)
	if err != nil {
		return nil, TierL2, 0, err
	}
	return payload, TierL2, ttl, nil
}

// fromL1 opens key's L1 entry. hit is false on a miss; an entry that fails
// to open is dropped and the read falls through to L2 (hit false, err nil).
func (c *Client) fromL1(ctx context.Context, s *scratch, key string) (payload []byte, hit bool, err error) {
	stored, ok := c.l1.Get(key)
	if !ok {
		c.stats.l1Misses.Add(1)
		return nil, false, nil
	}
	if len(stored) < LargeValueBytes {
		payload, err = c.open(ctx, s, key, stored)
	} else {
		payload, err = c.openLarge(ctx, s, key, stored)
	}
	if err == nil {
		c.stats.l1Hits.Add(1)
		return payload, true, nil
	}
	if notTheEntry(ctx, err) {
		return nil, false, err
	}
	c.openFailed(ctx, TierL1, err)
	c.l1.Delete(key)
	c.warn("l1 entry failed to open; evicted", key, err)
	return nil, false, nil
}

// fromL2 opens bytes Redis returned for key and, once they authenticate,
// backfills L1 with them for at most ttl (the entry's remaining TTL in
// Redis; 0 means unknown or none, and nothing is backfilled), only if
// nothing wrote, deleted or invalidated key since t was taken. Get, MGet
// and GetOrLoad all read Redis entries through here.
func (c *Client) fromL2(ctx context.Context, s *scratch, key string, stored []byte, ttl time.Duration, t ticket) ([]byte, error) {
	var payload []byte
	var err error
	if len(stored) < LargeValueBytes {
		payload, err = c.open(ctx, s, key, stored)
	} else {
		payload, err = c.openLarge(ctx, s, key, stored)
	}
	if err != nil {
		if notTheEntry(ctx, err) {
			return nil, err
		}
		c.openFailed(ctx, TierL2, err)
		c.warn("l2 entry failed to open", key, err)
		return nil, &EntryError{Tier: TierL2, KeyDigest: c.keyDigest(key), Err: err}
	}
	c.stats.l2Hits.Add(1)
	if c.l1 != nil && ttl > 0 {
		c.admit(key, t, stored, ttl, false)
	}
	return payload, nil
}

// readFailed turns a failed Redis read into the error the caller sees: a
// miss, a degraded miss under FailOpen, or the Redis error.
func (c *Client) readFailed(ctx context.Context, key string, err error) error {
	if errors.Is(err, l2.ErrNotFound) {
		c.stats.l2Misses.Add(1)
		return ErrNotFound
	}
	c.stats.l2Errors.Add(1)
	if c.degradable(ctx, err) {
		c.stats.degraded.Add(1)
		c.warn("redis read failed; treated as a miss (fail-open)", key, err)
		return &MissError{Err: err}
	}
	return err
}

// seal turns a msgpack payload into the bytes both tiers store, in a fresh
// slice that L1 may keep. A large compressed payload is sealed in place:
// its envelope is written NonceSize bytes into the buffer the entry will
// be and encrypted where it lies, so a 64 MiB Set allocates the payload
// and the entry, about twice the value, not three times.
func (c *Client) seal(ctx context.Context, s *scratch, key string, payload []byte) ([]byte, error) {
	if c.enc == nil {
		body := payload
		if c.compressed {
			var err error
			if s.plain, err = protocol.SealEnvelope(s.plain[:0], payload, protocol.FormatMsgpack); err != nil {
				return nil, err
			}
			body = s.plain
		}
		return chunked.Append(make([]byte, 0, len(body)), body), nil
	}
	aad, err := c.appendAAD(s, key)
	if err != nil {
		return nil, err
	}
	body, dst := payload, []byte(nil)
	switch {
	case c.compressed && len(payload) >= LargeValueBytes:
		buf := make([]byte, encryption.NonceSize, encryption.NonceSize+protocol.SealEnvelopeBound(len(payload))+encryption.TagSize)
		env, err := protocol.SealEnvelope(buf, payload, protocol.FormatMsgpack)
		if err != nil {
			return nil, err
		}
		body, dst = env[encryption.NonceSize:], buf[:0]
	case c.compressed:
		if s.plain, err = protocol.SealEnvelope(s.plain[:0], payload, protocol.FormatMsgpack); err != nil {
			return nil, err
		}
		body = s.plain
	}
	if dst == nil {
		dst = make([]byte, 0, len(body)+encryption.Overhead)
	}
	out, d, err := c.enc.EncryptNow(dst, body, aad)
	if d != nil {
		out, err = d.Wait(ctx)
	}
	if err != nil {
		chunked.Clear(body) // an envelope sealed in place holds plaintext
		return nil, c.mapErr(err)
	}
	// A large value that compressed well leaves most of its buffer
	// unused; L1 would keep all of it for as long as it keeps the entry.
	if cap(out)-len(out) > len(out)/8 {
		out = chunked.Append(make([]byte, 0, len(out)), out)
	}
	return out, nil
}

// open authenticates and unwraps stored bytes into the msgpack payload. The
// container is the one this Client is configured for; it never guesses.
func (c *Client) open(ctx context.Context, s *scratch, key string, stored []byte) ([]byte, error) {
	// An entry too large to hold a value within MaxValueBytes (the bound
	// allows LZ4's worst-case growth, the envelope and the AEAD overhead)
	// is refused before it is decrypted into a buffer of its size.
	if len(stored) > c.maxEntry {
		return nil, &FormatError{Op: "entry", Reason: "larger than MaxValueBytes allows", Err: protocol.ErrTooLarge}
	}
	body := stored
	if c.enc != nil {
		aad, err := c.appendAAD(s, key)
		if err != nil {
			return nil, err
		}
		var d *encryption.Deferred
		s.plain, d, err = c.enc.DecryptNow(s.plain[:0], stored, aad)
		if d != nil {
			s.plain, err = d.Wait(ctx)
		}
		if err != nil {
			return nil, c.openErr(err)
		}
		body = s.plain
	}
	if c.compressed {
		var err error
		if s.value, err = protocol.OpenEnvelopeMax(s.value[:0], body, c.maxValue); err != nil {
			return nil, err
		}
		body = s.value
	}
	if err := protocol.CheckMsgpack(body, c.limits); err != nil {
		return nil, err
	}
	return body, nil
}

// appendAAD builds the AAD v0x03 for key into s.aad: tenant, the full Redis
// key (prefix included), format "msgpack" and the compressed flag. The
// shared components were validated in New; only key is checked here.
func (c *Client) appendAAD(s *scratch, key string) ([]byte, error) {
	if c.aadErr != nil {
		return s.aad[:0], c.aadErr
	}
	var err error
	s.aad, err = c.aad.Append(s.aad[:0], key)
	return s.aad, err
}

// notTheEntry reports whether an open failed for a reason that says nothing
// about the entry: the Client closed, the caller gave up, or the keys could
// not be derived (a KeyProvider that failed, or returned keys the keyring
// refuses). Such an entry is neither evicted nor counted nor reloaded over.
func notTheEntry(ctx context.Context, err error) bool {
	var pe *ProviderError
	return errors.Is(err, ErrClosed) || ctx.Err() != nil || errors.As(err, &pe) ||
		errors.Is(err, encryption.ErrInvalidConfig)
}

// maxEntryOverhead bounds what an entry adds to its value: the envelope's
// header and LZ4's fixed worst-case growth, and the AEAD's nonce and tag.
const maxEntryOverhead = 256 + encryption.Overhead

// openErr classifies a decryption failure: ErrClosed for a closed
// encryptor, and an entry too short to hold a nonce and a tag (an
// *encryption.FormatError) as what it is to a caller, an entry that does not
// authenticate: it matches ErrAuthFailed and keeps the length detail.
func (c *Client) openErr(err error) error {
	var fe *encryption.FormatError
	if errors.As(err, &fe) {
		return &unauthenticatedError{err}
	}
	return c.mapErr(err)
}

// unauthenticatedError is ErrAuthFailed with the reason it could not even
// be tried.
type unauthenticatedError struct{ err error }

func (e *unauthenticatedError) Error() string   { return ErrAuthFailed.Error() + ": " + e.err.Error() }
func (e *unauthenticatedError) Unwrap() []error { return []error{ErrAuthFailed, e.err} }

// mapErr turns the encryption package's closed error into ErrClosed.
func (c *Client) mapErr(err error) error {
	if errors.Is(err, encryption.ErrClosed) {
		return ErrClosed
	}
	return err
}
