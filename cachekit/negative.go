package cachekit

// Negative caching: with Options.NegativeTTL, a loader's "not found" is
// cached as a negative entry and lands like a value (landing.go: sealed,
// under the load's lease or compare, through the ticket), so every write
// of the key replaces it and invalidation drops its L1 copies. Its stored
// form is a placeholder of l2's family (the 12-byte head "\xc1ck-absnt/1 ",
// which Lua and the 12-byte probe treat as absent) followed by a body
// sealed like a value's entry: AES-256-GCM under the standard AAD v0x03
// (tenant, full key, "msgpack", the compressed flag), of a plaintext that
// starts with 0xc1 (which no msgpack value and no envelope starts with)
// and carries the entry's not-after. Without encryption the body is the
// plaintext and a SHA-224 of it bound to the full key.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strconv"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// MaxNegativeTTL caps Options.NegativeTTL and the TTL a loader chooses with
// OverrideTTL for its "not found" (a longer override is cut to it): one
// hour, the longest an insert that no cache write announces (a write to
// the source alone) stays hidden by a cached "not found", and the longest a
// negative entry copied out of Redis can be replayed into it.
const MaxNegativeTTL = time.Hour

// NegativeHitError is what a read returns for a key whose cached entry is
// a negative entry (a "not found" a loader returned and GetOrLoad cached,
// Options.NegativeTTL) that authenticates under this Client's keys, key
// and tenant and whose sealed not-after has not passed: the key is absent,
// and the cache said so without a load. errors.Is(err, ErrNotFound)
// holds. Get, GetWithTTL, GetBytes, AppendValue and Raw.AppendPayload
// return it; MGet leaves the key out; GetOrLoad and GetOrLoadTTL return it
// without loading when this Client caches negatives (otherwise they load,
// and replace the negative entry). A loader's own "not found" reaches
// GetOrLoad's callers as the loader returned it, and FailOpen's *MissError
// is a miss that loads: neither is a NegativeHitError.
type NegativeHitError struct {
	// Tier is the tier that held the negative entry.
	Tier Tier
}

// Error implements error.
func (e *NegativeHitError) Error() string {
	return "cachekit: not found (a cached not-found, " + string(e.Tier) + ")"
}

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *NegativeHitError) Is(target error) bool { return target == ErrNotFound }

// NegativeSealed returns the part of stored, the bytes Redis holds for a
// key, that is sealed like a value's entry when stored has the form of a
// negative entry (its 12-byte head and length; whether it authenticates,
// Raw.OpenStored tells), and false otherwise. With encryption it is
// nonce‖AES-256-GCM(plaintext)‖tag under the same AAD a value of the key
// gets; the bytes before it are the head. Tools that re-seal entries
// (cachekit rotate) re-seal this part and keep the head.
func NegativeSealed(stored []byte) ([]byte, bool) {
	if !l2.IsNegative(stored) {
		return nil, false
	}
	return stored[len(l2.NegativeMagic):], true
}

// A negative entry's plaintext: the flag 0xc1, the format version 1, and
// the not-after (Unix milliseconds, big-endian).
const (
	negativeFlag    = 0xc1
	negativeVersion = 1
	negativeBodyLen = 10
)

// negativeSumLen is the length of the key-bound SHA-224 that follows the
// plaintext without encryption: NegativeLen's body is 38 bytes either way.
const negativeSumLen = sha256.Size224

// negativeSlack is how long past its sealed not-after a negative entry
// reads as a plain miss (Redis expires it a store's transit, and a clock
// skew, after its writer's not-after); later, it is a replay and reads as
// an entry that cannot be opened.
const negativeSlack = time.Second

// absence is a loader's "not found" (err, as the loader returned it) on
// its way to the landing path and through a flight, when this Client
// caches negatives: it lands as a negative entry, and travels with the
// time it was last known current as a loaded value does (flightValue
// hands err to the callers).
type absence struct{ err error }

// cachesAbsence reports whether the loader's error err is a "not found"
// this Client caches: negative caching on, err matching ErrNotFound, and
// not a guess (FailOpen's *MissError or an entry that could not be
// opened, met by a loader that reads a cache itself).
func (c *Client) cachesAbsence(err error) bool {
	return c.negTTL > 0 && errors.Is(err, ErrNotFound) && !isMissError(err) && !isUnopenable(err)
}

// needsLoad reports whether a GetOrLoad read that returned err loads: a
// miss, FailOpen's *MissError or an entry that cannot be opened do; a
// NegativeHitError does not when this Client caches negatives (a Client
// that does not loads and replaces it).
func (c *Client) needsLoad(err error) bool {
	return err != nil && loadable(err) && !(c.negTTL > 0 && isNegativeHit(err))
}

// isNegativeHit reports whether err is a NegativeHitError (nil costs
// nothing: errors.As would allocate its target).
func isNegativeHit(err error) bool {
	if err == nil {
		return false
	}
	var ne *NegativeHitError
	return errors.As(err, &ne)
}

// negativeTTL is the TTL of a loader's cached "not found": its override
// (capped at MaxNegativeTTL), or Options.NegativeTTL.
func (c *Client) negativeTTL(override time.Duration) time.Duration {
	if override > 0 {
		return min(override, MaxNegativeTTL)
	}
	return c.negTTL
}

// sealNegative returns the stored bytes of a negative entry of key living
// ttl from now (its not-after), in a fresh slice L1 may keep.
func (c *Client) sealNegative(ctx context.Context, key string, ttl time.Duration) ([]byte, error) {
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	var body [negativeBodyLen]byte
	body[0], body[1] = negativeFlag, negativeVersion
	binary.BigEndian.PutUint64(body[2:], uint64(c.now().Add(ttl).UnixMilli()))
	out := append(make([]byte, 0, l2.NegativeLen), l2.NegativeMagic...)
	if c.enc == nil {
		sum := c.negativeSum(key, body[:])
		return append(append(out, body[:]...), sum[:]...), nil
	}
	s := getScratch()
	defer putScratch(s)
	aad, err := c.appendAAD(s, key)
	if err != nil {
		return nil, err
	}
	out, d, err := c.enc.EncryptNow(out, body[:], aad)
	if d != nil {
		out, err = d.Wait(ctx)
	}
	if err != nil {
		return nil, c.mapErr(err)
	}
	return out, nil
}

// negativeSum binds an unencrypted negative entry's plaintext to its full
// key: a copy under another key, a cut or a flipped byte does not pass (a
// forger who can write Redis computes it, as it writes any plaintext value).
func (c *Client) negativeSum(key string, body []byte) [negativeSumLen]byte {
	h := sha256.New224()
	h.Write([]byte("cachekit negative entry v1\x00"))
	h.Write([]byte(c.fullKey(key)))
	h.Write([]byte{0})
	h.Write(body)
	var sum [negativeSumLen]byte
	h.Sum(sum[:0])
	return sum
}

// errNegativeLapsed is openNegative's error for a negative entry within
// negativeSlack past its not-after: a plain miss.
var errNegativeLapsed = errors.New("cachekit: negative entry past its not-after")

// openNegative authenticates stored, which has the form of a negative
// entry of key (l2.IsNegative), and returns its not-after and the keyring
// entry that authenticated it (-1 without encryption). Its errors: the
// decryption's (ErrAuthFailed for a copy from another key or tenant, a
// forgery, a value's ciphertext behind the head), a *FormatError for a
// plaintext that is no negative entry's (a value's entry of the right
// length behind the head) or an unencrypted one whose sum fails,
// errNegativeLapsed itself within negativeSlack past the not-after, and
// later (a replay) a *FormatError that wraps it.
func (c *Client) openNegative(ctx context.Context, s *scratch, key string, stored []byte) (notAfter time.Time, idx int, err error) {
	body, idx := stored[len(l2.NegativeMagic):], -1
	if c.enc == nil {
		plain := body[:negativeBodyLen]
		if sum := c.negativeSum(key, plain); !bytes.Equal(sum[:], body[negativeBodyLen:]) {
			return time.Time{}, idx, errNegativeSum
		}
		body = plain
	} else {
		aad, err := c.appendAAD(s, key)
		if err != nil {
			return time.Time{}, idx, err
		}
		var info encryption.DecryptInfo
		var d *encryption.Deferred
		s.plain, info, d, err = c.enc.DecryptNowInfo(s.plain[:0], body, aad)
		if d != nil {
			s.plain, err = d.Wait(ctx)
			info = d.Info()
		}
		if err != nil {
			return time.Time{}, idx, c.openErr(err)
		}
		body, idx = s.plain, info.KeyIndex
	}
	if len(body) != negativeBodyLen || body[0] != negativeFlag || body[1] != negativeVersion {
		return time.Time{}, idx, errNegativeForm
	}
	notAfter = time.UnixMilli(int64(binary.BigEndian.Uint64(body[2:])))
	switch past := c.now().Sub(notAfter); {
	case past <= 0:
		return notAfter, idx, nil
	case past <= negativeSlack:
		return notAfter, idx, errNegativeLapsed
	}
	return notAfter, idx, &FormatError{Op: "entry", Err: errNegativeLapsed,
		Reason: "a negative entry " + strconv.FormatInt(c.now().Sub(notAfter).Milliseconds(), 10) + " ms past its sealed not-after (replayed)"}
}

var (
	errNegativeSum = &FormatError{Op: "entry", Err: protocol.ErrChecksum,
		Reason: "a negative entry whose sum does not match its key and plaintext"}
	errNegativeForm = &FormatError{Op: "entry", Err: protocol.ErrMalformed,
		Reason: "the head of a negative entry over a body that is not one"}
)

// readNegative is a read's answer for stored, bytes of key in tier that
// have the form of a negative entry: a *NegativeHitError (counted) when it
// opens, after backfilling L1 with it through t for ttl when it came from
// Redis (as fromL2 does for a value); ErrNotFound when it lapsed (within
// negativeSlack); an error that says nothing about the entry as it is;
// else an Unopenable *EntryError (IOP-24: counted, warned about, a miss
// that GetOrLoad replaces).
func (c *Client) readNegative(ctx context.Context, s *scratch, tier Tier, key string, stored []byte, ttl time.Duration, t ticket) error {
	_, _, err := c.openNegative(ctx, s, key, stored)
	switch {
	case err == nil:
		c.stats.NegativeHits.Add(1)
		if tier == TierL2 && c.l1 != nil && ttl > 0 {
			c.admit(key, t, stored, ttl, false)
		}
		return &NegativeHitError{Tier: tier}
	case err == errNegativeLapsed: // not a replay: a plain miss
		if tier == TierL2 {
			c.stats.L2Misses.Add(1)
		}
		return ErrNotFound
	case notTheEntry(ctx, err):
		return err
	}
	c.openFailed(ctx, tier, err)
	c.warn(string(tier)+" negative entry failed to open", key, err)
	return &EntryError{Tier: tier, KeyDigest: c.keyDigest(key), Err: err, Unopenable: true}
}
