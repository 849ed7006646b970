package cachekit

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Raw is the Client's door for inspection and maintenance tools, such as
// the cachekit command: it reads and rewrites the sealed bytes Redis holds
// as they are, opens them step by step with the Client's own open, hands
// over a value's msgpack payload undecoded, and deletes by key (counting)
// or by pattern. It is the one place such calls live, as database/sql's
// Conn.Raw is the one door to the driver's connection; applications read
// and write through the Client's own methods. Every method returns
// ErrClosed after Close.
//
// Under a name key (encryption.Config.NameKey) Redis holds opaque names:
// Get, AppendPayload, Delete and Open take the application's key, as the
// Client's methods do, while Scan, ScanFrom, DeleteMatching, Swap and
// OpenStored see and take stored names (what follows the prefix in
// Redis), which StoredKey computes for a key.
type Raw struct{ c *Client }

// Raw returns the Client's door for tools (see Raw).
func (c *Client) Raw() Raw { return Raw{c} }

// Get returns the stored (sealed) bytes of key exactly as Redis holds
// them, without opening them; in L1-only mode, L1's copy. A key holding a
// lease (GetOrLoad loading it) or nothing is ErrNotFound; a negative entry
// (a cached "not found") is returned as its bytes (NegativeSealed and
// OpenStored tell it).
func (r Raw) Get(ctx context.Context, key string) ([]byte, error) {
	c := r.c
	key = c.local(key)
	if c.closed.Load() {
		return nil, ErrClosed
	}
	if c.l2 == nil {
		if c.l1 != nil {
			if b, ok := c.l1.Get(key); ok {
				return chunked.Append(nil, b), nil
			}
		}
		return nil, ErrNotFound
	}
	var b []byte
	err := c.redis(ctx, "get", 0, func(ctx context.Context) error {
		var err error
		b, err = c.l2.Get(ctx, c.fullKey(key))
		return err
	})
	if errors.Is(err, l2.ErrNotFound) {
		return nil, ErrNotFound
	}
	return b, err
}

// AppendPayload appends the msgpack payload of the value stored under key
// to dst and returns the extended slice: the document Get would decode,
// read and opened by Get's own path (L1, then Redis; authenticated,
// unwrapped and checked to be exactly one msgpack document within the
// Client's decode bounds, counted and observed as a Get), but not decoded.
// Its errors are Get's. It is meant for tools that decode msgpack
// themselves, such as the cachekit command's get, which prints any value
// as JSON with its integers exact.
func (r Raw) AppendPayload(ctx context.Context, dst []byte, key string) ([]byte, error) {
	return r.c.appendValue(ctx, observe.OpGet, dst, key, false)
}

// Delete is Client.Delete (the same Redis commands, L1 drops and
// invalidation messages) that also returns how many of keys held an entry
// in Redis. A key holding a lease (GetOrLoad loading it) is deleted, which
// voids the load, but not counted; so is a negative entry (a cached "not
// found"). Each key's count is read in the round
// trip that deletes it, so no separate Exists can race the delete; the
// count can be off by one for a key a load leases or fills between its
// lease probe and its DEL (see l2's Delete), and after a retried round trip
// (Options.Reliability) it is the last attempt's. Without Redis (L1-only
// mode) it drops the L1 copies and returns 0. It is meant for operators'
// tools such as the cachekit command's del.
func (r Raw) Delete(ctx context.Context, keys ...string) (int64, error) {
	return r.c.deleteCounted(ctx, keys)
}

// OpenedEntry is what Raw.Open found at each step of opening one entry.
// On an error its fields say how far the open got.
type OpenedEntry struct {
	// KeyIndex is the keyring entry that authenticated the entry: 0 for
	// the current key, i for Encryption.PreviousKeys[i-1]; -1 without
	// encryption or when decryption failed.
	KeyIndex int
	// KeyFingerprint is the hex fingerprint of that keyring entry (as
	// Stats.KeyFingerprint names the current one), "" when KeyIndex is -1.
	// It identifies the key without revealing it.
	KeyFingerprint string
	// Container is what the encryption held (without encryption, the
	// stored bytes): the ByteStorage envelope with compression on, the
	// msgpack payload with it off. Nil when the open failed before it
	// (decryption, or the size bound).
	Container []byte
	// Payload is the msgpack payload out of the container. Nil when the
	// open failed before it (the envelope did not open); set together with
	// an error, it is not exactly one msgpack document within the Client's
	// decode bounds.
	Payload []byte
	// Negative reports bytes with the form of a negative entry (a cached
	// "not found", Options.NegativeTTL): then Container and Payload are
	// nil, KeyIndex names the keyring entry that authenticated its sealed
	// body (-1 without encryption or when it did not), and NotAfter is
	// its sealed not-after once it authenticated (zero otherwise). Open's
	// error is nil for one that reads as a negative hit.
	Negative bool
	NotAfter time.Time
}

// Open opens stored, the stored bytes of the application's key (as Raw.Get
// returned them; for an entry Raw.Scan found, see OpenStored), with the Client's own open, the one Get runs on every
// entry of either tier: the MaxValueBytes bound, decryption under the
// keyring with the AAD of tenant, full key, format and compressed flag,
// the ByteStorage envelope and its checksum, and the bounded msgpack
// check. It reports what each step found, and returns the error Get's open
// would meet (matching ErrAuthFailed for bytes that do not authenticate,
// a protocol error for a damaged envelope or payload). It reads and writes
// neither tier and counts nothing in Stats but the keyring's decryptions
// (two per entry: the open's, and the report's of the keyring entry).
// Container and Payload are fresh copies of the entry's plaintext: clear
// them when done. It is meant for inspection tools such as the cachekit
// command's inspect.
func (r Raw) Open(ctx context.Context, key string, stored []byte) (OpenedEntry, error) {
	return r.OpenStored(ctx, r.c.local(key), stored)
}

// OpenStored is Open of an entry named by its stored key (RawEntry.Key, as
// Scan reports it; StoredKey of the application's key): the same as Open
// without a name key, and the way to open what Scan found with one, since
// the AAD binds the stored name.
func (r Raw) OpenStored(ctx context.Context, key string, stored []byte) (OpenedEntry, error) {
	c := r.c
	info := OpenedEntry{KeyIndex: -1}
	if c.closed.Load() {
		return info, ErrClosed
	}
	if key == "" {
		return info, errEmptyKey
	}
	s := getScratch()
	defer putScratch(s) // wipes the plaintext the copy below was taken from
	if isNegativeEntry(stored) {
		var err error
		info.Negative = true
		info.NotAfter, info.KeyIndex, err = c.openNegative(ctx, s, key, stored)
		if info.KeyIndex >= 0 {
			info.KeyFingerprint = c.enc.KeyFingerprint(info.KeyIndex)
		}
		return info, err
	}
	payload, err := c.open(ctx, s, key, stored)
	if err == nil {
		info.Payload = chunked.Append(make([]byte, 0, len(payload)), payload)
	}
	if len(stored) <= c.maxEntry && (err == nil || !notTheEntry(ctx, err)) {
		c.retrace(ctx, s, key, stored, &info)
	}
	if info.KeyIndex >= 0 {
		info.KeyFingerprint = c.enc.KeyFingerprint(info.KeyIndex)
	}
	return info, err
}

// retrace notes in info what the open of stored passed through, for
// Raw.Open's report, off Get's path: the keyring entry that authenticates
// it and the container (fresh copies, from a second decryption), and, when
// the open failed after the container, the payload out of it.
func (c *Client) retrace(ctx context.Context, s *scratch, key string, stored []byte, info *OpenedEntry) {
	container := chunked.Append(make([]byte, 0, len(stored)), stored)
	if c.enc != nil {
		aad, err := c.appendAAD(s, key)
		if err != nil {
			return
		}
		plain, idx, err := c.enc.DecryptIndex(ctx, nil, stored, aad)
		if err != nil {
			return
		}
		container, info.KeyIndex = plain, idx
	}
	info.Container = container
	if info.Payload == nil {
		payload := container
		if c.compressed {
			var err error
			if payload, err = protocol.OpenEnvelopeMax(nil, container, c.maxValue); err != nil {
				return
			}
		}
		info.Payload = chunked.Append(make([]byte, 0, len(payload)), payload)
	}
}

// rawBatch is how many keys one SCAN step asks for (a hint to Redis) and
// so, about, how many one pipeline reads.
const rawBatch = 500

// RawEntry is one entry as Raw.Scan reads it, unopened: its stored key,
// without Options.KeyPrefix (an opaque name under a name key), the bytes
// Redis holds (nil when the key holds another Redis type) and its
// remaining TTL (0: no expiry).
type RawEntry = l2.Entry

// Scan walks Redis for the keys matching pattern (a Redis glob, matched
// after Options.KeyPrefix, which is matched literally; on a cluster client,
// every master) and calls fn with each batch of entries, about 500 at a
// time: their keys, stored bytes and remaining TTLs, read with single-key
// commands in one pipeline per batch and not opened (a negative entry
// among them: NegativeSealed and OpenStored tell it; a lease is left out).
// A key that expires between the walk and the read is left out; as with
// SCAN itself, a key may be reported twice while Redis resizes its tables. It is meant for
// inspection tools such as the cachekit command's scan; an error from fn
// stops the walk and is returned. Under a name key pattern matches, and
// the entries carry, stored (opaque) names, and the walk also reports the
// name-key marker (NameMarker), whose bytes are not an entry.
func (r Raw) Scan(ctx context.Context, pattern string, fn func([]RawEntry) error) error {
	return r.ScanFrom(ctx, pattern, 0, func(batch []RawEntry, _ uint64) error {
		if len(batch) == 0 {
			return nil
		}
		return fn(batch)
	})
}

// ScanFrom is Scan starting at a SCAN cursor (0: the beginning), so
// a long walk can be resumed: fn also receives the cursor to resume from
// once it has handled the batch (0 after the last one; the batch may then
// be empty). A cluster client keeps one cursor per master, so with one
// ScanFrom refuses a nonzero cursor.
func (r Raw) ScanFrom(ctx context.Context, pattern string, cursor uint64, fn func(batch []RawEntry, next uint64) error) error {
	c := r.c
	if c.closed.Load() {
		return ErrClosed
	}
	if c.l2 == nil {
		return nil
	}
	return c.l2.ScanEntries(ctx, c.prefix, pattern, rawBatch, cursor, fn)
}

// DeleteMatching deletes from Redis every key matching pattern (a Redis
// glob, matched after Options.KeyPrefix, which is matched literally; on a
// cluster client, every master) with UNLINK, about 500 at a time, drops
// them from this process's L1, and returns how many Redis deleted. Other
// instances drop their L1 copies when their Client has Options.Invalidation
// on (Redis reports the deletes). It is meant for operators' tools such as
// the cachekit command's flush.
func (r Raw) DeleteMatching(ctx context.Context, pattern string) (int64, error) {
	c := r.c
	if c.closed.Load() {
		return 0, ErrClosed
	}
	if c.l2 == nil {
		return 0, nil
	}
	return c.l2.UnlinkMatching(ctx, c.prefix, pattern, rawBatch, func(keys []string) {
		for _, k := range keys {
			c.dropL1(k)
		}
	})
}

// RawSwap is one compare-and-set for Raw.Swap: its Key is the stored key,
// without Options.KeyPrefix (as Scan reports it), Old and New the stored
// bytes expected and their replacement.
type RawSwap = l2.Swap

// Swap replaces stored bytes: for each item, key's value becomes New,
// keeping its remaining TTL, only while key still holds exactly Old (one
// server-side compare-and-set per key, all in one pipeline), so a value
// written meanwhile is never overwritten. done[i] reports whether item i
// was swapped; errs[i] is non-nil when item i failed; done[i] false with
// errs[i] nil means the key no longer held Old (rewritten, expired, or now
// of another Redis type). This process's L1 copies of the swapped keys are
// dropped. It is meant for operators' tools such as the cachekit command's
// rotate, which re-seals entries under the current key.
func (r Raw) Swap(ctx context.Context, items []RawSwap) (done []bool, errs []error) {
	c := r.c
	if closed := c.closed.Load(); closed || c.l2 == nil {
		var err error // L1-only mode: nothing to swap
		if closed {
			err = ErrClosed
		}
		return make([]bool, len(items)), slices.Repeat([]error{err}, len(items))
	}
	done, errs = c.l2.SwapMany(ctx, c.prefix, items)
	for i, ok := range done {
		if ok {
			c.dropL1(items[i].Key)
		}
	}
	return done, errs
}

// StoredKey returns the key, after Options.KeyPrefix, that Redis holds
// key's entry under: key itself, or its opaque name with a name key
// (encryption.Config.NameKey). Scan's RawEntry.Key and Swap's RawSwap.Key
// are such stored keys.
func (r Raw) StoredKey(key string) string { return r.c.local(key) }
