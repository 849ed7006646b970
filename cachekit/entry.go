package cachekit

// An entry is what both tiers store, of one of two kinds, and this file
// is the only way in and out of either; the head decides the kind before
// any AES-256-GCM open, on L1 and L2 alike (entryKind).
//
// A value's entry: the msgpack payload, in the ByteStorage envelope when
// compression is on, sealed with AES-256-GCM under an AAD binding tenant,
// full key, format and compressed flag when encryption is on (seal, open).
//
// A negative entry (a cached "not found", negative.go): l2 owns its head,
// the 12 bytes "\xc1ck-absnt/1 " of its placeholder family
// (l2.NegativeMagic: its Lua and its 12-byte probe read the key as absent)
// and its length (l2.NegativeLen); this file owns its body, sealed like a
// value's entry: AES-256-GCM under the standard AAD v0x03 (tenant, full
// key, "msgpack", the compressed flag) of a 10-byte plaintext that starts
// with 0xc1 (which no msgpack value and no envelope starts with) and
// carries the entry's not-after; without encryption the plaintext and a
// SHA-224 of it bound to the full key (sealNegative, openNegative).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/codec"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// isNegativeEntry reports whether stored has the head and length of a
// negative entry (whether it authenticates, openNegative tells): its kind,
// decided before any open.
func isNegativeEntry(stored []byte) bool { return l2.IsNegative(stored) }

// errNegativeEntry is open's error for a negative entry: a value's open
// refuses it by its head, before decrypting anything; the read opens it
// as what it is (readNegative).
var errNegativeEntry = errors.New("cachekit: a negative entry, not a value's")

// sealEntry seals an entry of key of either kind, in a fresh slice: a
// negative entry living ttl when negative, else value's entry (sealValue).
func (c *Client) sealEntry(ctx context.Context, key string, value any, negative bool, ttl time.Duration) ([]byte, error) {
	if negative {
		return c.sealNegative(ctx, key, ttl)
	}
	return c.sealValue(ctx, key, value)
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
	if !held {
		if held, err = c.enterLarge(ctx, len(payload)); err != nil {
			return nil, err
		}
		defer c.leaveLarge(held)
	}
	return c.seal(ctx, s, key, payload)
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

// open authenticates and unwraps a value's entry into the msgpack payload
// (a negative entry is refused by its head: errNegativeEntry),
// holding a large-work slot (LargeValueConcurrency) for a large entry: a
// small entry pays one comparison. Get, MGet and GetOrLoad open every entry,
// from either tier, here. The container is the one this Client is
// configured for; it never guesses.
func (c *Client) open(ctx context.Context, s *scratch, key string, stored []byte) ([]byte, error) {
	if isNegativeEntry(stored) {
		return nil, errNegativeEntry
	}
	if len(stored) >= LargeValueBytes && !s.inSlot {
		return c.openLarge(ctx, s, key, stored)
	}
	// An entry too large to hold a value within MaxValueBytes (the bound
	// allows LZ4's worst-case growth, the envelope and the AEAD overhead)
	// is refused before it is decrypted into a buffer of its size.
	if len(stored) > c.maxEntry {
		return nil, c.overLimit()
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
			if isCKFrame(body) { // cachekit-py's container: name its writer
				return nil, protocol.CheckMsgpack(body, c.limits)
			}
			return nil, c.envelopeSizeErr(err, body)
		}
		body = s.value
	}
	if err := protocol.CheckMsgpack(body, c.limits); err != nil {
		if len(body) > c.maxValue { // the limit that refused it is MaxValueBytes
			return nil, c.overLimit()
		}
		return nil, err
	}
	if c.foreignEnvelope(body) {
		return nil, errForeignEnvelope
	}
	return body, nil
}

// isCKFrame reports whether b starts with the magic of cachekit-py's
// auto-mode container, the CK frame, which only cachekit-py decodes;
// protocol.CheckMsgpack refuses such bytes with ErrPythonFrame.
func isCKFrame(b []byte) bool { return len(b) >= 2 && b[0] == 'C' && b[1] == 'K' }

// errForeignEnvelope is open's error for a plain-msgpack payload that has
// the exact shape of a ByteStorage envelope (WIRE-21).
var errForeignEnvelope = &FormatError{Op: "entry", Err: protocol.ErrForeignContainer,
	Reason: "a ByteStorage envelope (another SDK's auto-mode container, e.g. cachekit-ts's default, or an entry written with compression on): " +
		"a Client with DisableCompression reads plain msgpack and never unwraps an envelope"}

// foreignEnvelope reports whether payload, read or about to be written by
// a Client with DisableCompression outside interop mode, has the exact
// shape of a ByteStorage envelope: another SDK's auto-mode container, which
// no SDK may decode (protocol.IsEnvelopeShape; the check only ever
// refuses). Interop values are exempt: any well-formed document is a
// value there, and no SDK writes an envelope under an interop key.
func (c *Client) foreignEnvelope(payload []byte) bool {
	return !c.compressed && !c.interop && protocol.IsEnvelopeShape(payload)
}

// overLimit is the error of an entry refused for its size: the limit that
// refused it is MaxValueBytes (at most the protocol's 512 MiB), and the
// error names it with its value.
func (c *Client) overLimit() error {
	return &FormatError{Op: "entry", Reason: "larger than MaxValueBytes (" + strconv.Itoa(c.maxValue) + " bytes) allows",
		Err: protocol.ErrTooLarge}
}

// envelopeSizeErr is what open returns for env's envelope error err: the
// MaxValueBytes error when the envelope is sound but claims more than
// MaxValueBytes (the limit OpenEnvelopeMax ran with, whose own text names
// the protocol's 512 MiB), err itself otherwise (malformed, or over the
// protocol's own limits).
func (c *Client) envelopeSizeErr(err error, env []byte) error {
	if !errors.Is(err, protocol.ErrTooLarge) {
		return err
	}
	if e, perr := protocol.ParseEnvelope(env); perr == nil && e.OriginalSize > uint64(c.maxValue) {
		return c.overLimit()
	}
	return err
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

// openErr classifies a decryption failure: ErrClosed for a closed
// encryptor, and an entry too short to hold a nonce and a tag (an
// *encryption.LengthError) as what it is to a caller, an entry that does not
// authenticate: it matches ErrAuthFailed and keeps the length detail.
func (c *Client) openErr(err error) error {
	var fe *encryption.LengthError
	if errors.As(err, &fe) {
		return &unauthenticatedError{err}
	}
	return c.mapErr(err)
}

// unauthenticatedError is ErrAuthFailed with the reason it could not even
// be tried.
type unauthenticatedError struct{ err error }

func (e *unauthenticatedError) Error() string { return ErrAuthFailed.Error() + ": " + e.err.Error() }

func (e *unauthenticatedError) Unwrap() []error { return []error{ErrAuthFailed, e.err} }

// mapErr turns the encryption package's closed error into ErrClosed.
func (c *Client) mapErr(err error) error {
	if errors.Is(err, encryption.ErrClosed) {
		return ErrClosed
	}
	return err
}

// openLarge is open of a large entry in a large-work slot: it takes one
// and opens the entry through open again, marked as holding it.
func (c *Client) openLarge(ctx context.Context, s *scratch, key string, stored []byte) ([]byte, error) {
	held, err := c.enterLarge(ctx, len(stored))
	if err != nil {
		return nil, err
	}
	s.inSlot = true
	defer func() { s.inSlot = false; c.leaveLarge(held) }()
	return c.open(ctx, s, key, stored)
}

// enterLarge takes a large-work slot (chunked.Slots.Enter) for n bytes of
// work, deriving the keys first (or waiting for the derivation in flight):
// a slot is for CPU work, not for waiting on a KeyProvider.
func (c *Client) enterLarge(ctx context.Context, n int) (held bool, err error) {
	return c.large.Enter(ctx, n, c.warmLarge)
}

func (c *Client) warmLarge(ctx context.Context) error {
	if c.enc == nil {
		return nil
	}
	return c.mapErr(c.enc.Warm(ctx))
}

// leaveLarge gives back the slot enterLarge took, if it took one.
func (c *Client) leaveLarge(held bool) { c.large.Leave(held) }

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

// The value codec itself (msgpack in auto mode, the protocol's canonical
// msgpack in interop mode, their pools) is internal/codec; this file binds
// it to a Client's mode and bounds.

// encode turns a caller's value into the msgpack payload, in s.value.
// Auto mode uses vmihailenco/msgpack with shortest-width integers (structs
// become maps keyed by field name or `msgpack` tag). Interop mode writes
// the protocol's canonical encoding, going through a generic decode when
// the value is a struct or another type the canonical writer does not take.
// A payload the read path would refuse is refused here, before any write.
func (c *Client) encode(s *scratch, value any) ([]byte, error) {
	out, err := c.encodeValue(s, value)
	if err != nil {
		return nil, err
	}
	if len(out) > c.maxValue {
		return nil, fmt.Errorf("%w: %d bytes encoded, MaxValueBytes %d", ErrValueTooLarge, len(out), c.maxValue)
	}
	// Refuse what no Get could read back (nesting past the decoder's depth
	// bound, more than its size bound) before anything is written.
	if err := protocol.CheckMsgpack(out, c.limits); err != nil {
		return nil, fmt.Errorf("cachekit: value would not read back: %w", err)
	}
	// A value that is itself exactly an envelope's shape would be refused
	// as another SDK's container (the one false positive of that check).
	if c.foreignEnvelope(out) {
		return nil, fmt.Errorf("cachekit: value would not read back: %w", errForeignEnvelope)
	}
	return out, nil
}

// encodeValue is encode without the read-back check.
func (c *Client) encodeValue(s *scratch, value any) ([]byte, error) {
	if b, ok := value.([]byte); ok && b == nil {
		value = []byte{} // a nil []byte reads back through GetBytes as empty, not as "not bytes"
	}
	var out []byte
	var err error
	if c.interop {
		out, err = codec.AppendInterop(s.value[:0], value, c.jsonTags)
	} else {
		out, err = codec.Append(s.value[:0], value, c.jsonTags)
	}
	if err != nil {
		clear(s.value[:cap(s.value)]) // what the encoder wrote before it failed
		return nil, err
	}
	s.value = out
	return out, nil
}

// decode decodes a checked payload into dst the way this Client's mode
// wrote it.
func (c *Client) decode(payload []byte, dst any) error {
	if c.interop {
		return codec.DecodeInterop(payload, dst, c.jsonTags)
	}
	return codec.Decode(payload, dst, c.jsonTags)
}

// checkKey rejects keys the mode cannot store: empty keys, and in interop
// mode anything that is not an interop/v1 key.
func (c *Client) checkKey(key string) error {
	if key == "" {
		return errEmptyKey
	}
	if c.interop {
		return protocol.ValidateInteropKey(key)
	}
	return nil
}

// Negative entries.

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
