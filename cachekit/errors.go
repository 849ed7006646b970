package cachekit

import (
	"errors"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Sentinel errors callers branch on with errors.Is.
var (
	// ErrNotFound: the key is in neither tier (or has expired).
	ErrNotFound = errors.New("cachekit: not found")
	// ErrClosed: the Client was closed; every cache operation after Close
	// (Get, Set, Delete, MGet, MSet, Exists, TTL, Ping, Warm, GetOrLoad...)
	// returns it. Close itself stays idempotent, and Stats, KeyDigest and
	// the other read-only accessors keep working.
	ErrClosed = errors.New("cachekit: client closed")
	// ErrAuthFailed: an entry did not authenticate under this client's keys,
	// tenant and cache key (tampered, moved from another key, written for
	// another tenant or under a key the keyring does not hold). It is the
	// encryption package's sentinel, so errors.Is matches either name.
	ErrAuthFailed = encryption.ErrAuthFailed
	// ErrNonceExhausted: the encryptor used all of its 2^32-1 nonces under
	// the current master key and refuses to encrypt rather than reuse one.
	// The remedy is rotating to a new master key (see the package's Key
	// rotation section); reads keep working.
	ErrNonceExhausted = encryption.ErrNonceExhausted
	// ErrInvalidTTL: a TTL was zero, negative or above the protocol maximum of
	// 30 days. Returned before any I/O.
	ErrInvalidTTL = protocol.ErrInvalidTTL
	// ErrConfig: Options cannot be used (see the wrapped message).
	ErrConfig = errors.New("cachekit: invalid options")
	// ErrNotBytes: GetBytes or AppendValue found a value that is not a
	// msgpack bin (it was not stored from a []byte).
	ErrNotBytes = errors.New("cachekit: value is not a byte string")
	// ErrWrongType: the key holds a Redis type other than a string (a list,
	// a hash...), so it is no CacheKit entry; Get and the other single-key
	// reads return a *BackendError that matches it, and MGet reports each
	// such key in an *EntryError that matches it. It is l2's sentinel.
	ErrWrongType = l2.ErrWrongType
	// ErrValueTooLarge: a value to store encodes to more than
	// Options.MaxValueBytes. Returned before any I/O; nothing stored changes.
	ErrValueTooLarge = errors.New("cachekit: value larger than MaxValueBytes")
	// ErrInvalidDestination: Get was given a nil or non-pointer dst, a
	// programming error reported before any I/O.
	ErrInvalidDestination = errors.New("cachekit: destination must be a non-nil pointer")
)

// Sentinels inside a *BackendError: why the Client did not get an answer
// from Redis.
var (
	// ErrCircuitOpen is the cause inside a *BackendError when the circuit
	// breaker refused a Redis call without sending it.
	ErrCircuitOpen = guard.ErrCircuitOpen
	// ErrOverloaded is the cause inside a *BackendError when a Redis call
	// could not get one of the MaxInFlight slots within MaxWait.
	ErrOverloaded = guard.ErrOverloaded
	// ErrTimeout is the cause inside a *BackendError when a Redis call ran
	// out of the time the Client gives it (AttemptTimeout, OperationTimeout
	// and a write's transfer allowance; with Options.Reliability nil, the
	// default AttemptTimeout of 200 ms and the allowance) before the
	// caller's own deadline. It satisfies net.Error with Timeout() true. It
	// never matches context.DeadlineExceeded: that, and context.Canceled,
	// are what a call returns when the caller's ctx ended it.
	ErrTimeout = guard.ErrTimeout
	// ErrOutcomeUnknown is matched by the *BackendError of a write (Set,
	// Delete, MSet, SetIfAbsent, Touch, a load's store...) whose request
	// may have reached Redis without a reply saying so: it timed out, its
	// connection broke after sending, or the caller's ctx ended while it
	// was queued. Redis may hold the new value or the old one. Such a
	// write is not sent again (Reliability.MaxAttempts retries only what
	// provably was not sent, and conditional writes that cannot land
	// twice), and it never lands after a later write of this Client to the
	// same server: the failed connection is killed by Redis (CLIENT KILL)
	// before anything more is sent there (Stats.Fences), unless Redis
	// refuses that (Stats.Unfenced, and a warning). The error of a write
	// any of whose attempts may have reached Redis matches it, whatever
	// the later attempts saw. A write refused before it was sent
	// (ErrCircuitOpen, ErrOverloaded) does not match it.
	ErrOutcomeUnknown = l2.ErrOutcomeUnknown
)

// BackendError reports a failed Redis operation: Op names it ("get", "set",
// ...), Err is the cause (context errors stay matchable with errors.Is).
// Its message never contains keys or values; Err is go-redis's error as it
// came, so do not log Err on its own.
type BackendError = l2.BackendError

// ProviderError reports that Options.Encryption's KeyProvider failed (or
// panicked) while the keys were being derived: no entry is at fault, so
// nothing is evicted, counted as an open failure or reloaded over; the call
// returns it and the next call tries the provider again. It is the
// encryption package's type.
type ProviderError = encryption.ProviderError

// FormatError reports stored bytes or inputs that break the protocol's byte
// formats (bad envelope, malformed msgpack, a checksum mismatch, a bad key).
type FormatError = protocol.FormatError

// Tier names where an entry came from.
type Tier string

// The tiers an entry can come from.
const (
	TierL1 Tier = "l1"
	TierL2 Tier = "l2"
)

// EntryError reports an entry that was found but could not be used: it
// could not be opened (authentication failed; the envelope, its checksum
// or the msgpack payload was malformed, or refused by the decode bounds;
// the bytes are another SDK's container; the entry is larger than
// MaxValueBytes allows), it did not decode into the destination, or (from
// MGet) the key holds another Redis type. It names the tier and a digest
// of the key (never the key itself); errors.Is/As reach the cause through
// Unwrap.
//
// An entry that could not be opened is a miss to every read (Get,
// GetWithTTL, GetBytes, AppendValue, InteropGet, MGet, Raw.AppendPayload):
// Unopenable is set and errors.Is(err, ErrNotFound) holds, as for a
// *MissError, so code that treats "not found" as "compute it" keeps
// working while errors.As still reaches this error and its cause (an
// AES-GCM failure matches ErrAuthFailed, a protocol rejection is a
// *FormatError). Such an entry is counted (Stats' L1OpenFailures and
// L2OpenFailures, the decrypt-failure metric, an event on the span) and
// warned about; it is never returned as a value, never retried, never
// counted by the breaker, and never a *MissError: FailOpen has no part in
// it. From L1 it is evicted and the read falls through to Redis; GetOrLoad
// and MGetOrLoad load a replacement. An entry that opened but did not
// decode into the destination, and a key of another Redis type, are not
// misses (the stored value is sound; it is not what the caller asked for).
type EntryError struct {
	Tier      Tier
	KeyDigest string
	Err       error
	// Unopenable reports that the entry could not be opened (see above):
	// the read is a miss and the error matches ErrNotFound.
	Unopenable bool
}

// Error implements error.
func (e *EntryError) Error() string {
	if e.Unopenable {
		return "cachekit: " + string(e.Tier) + " entry " + e.KeyDigest + " cannot be opened, read as a miss: " + e.Err.Error()
	}
	return "cachekit: " + string(e.Tier) + " entry " + e.KeyDigest + ": " + e.Err.Error()
}

// Is makes errors.Is(err, ErrNotFound) hold for an entry that could not be
// opened.
func (e *EntryError) Is(target error) bool { return e.Unopenable && target == ErrNotFound }

// Unwrap returns the cause.
func (e *EntryError) Unwrap() error { return e.Err }

func configErr(msg string) error { return &configError{msg: msg} }

// configErrFrom is a configuration error caused by cause (an
// *encryption.ConfigError, an invalid Redis URL): errors.Is matches both
// ErrConfig and the cause. cause's message must hold no secret; those of
// the encryption and l2 packages never do.
func configErrFrom(what string, cause error) error {
	return &configError{msg: what + ": " + cause.Error(), cause: cause}
}

type configError struct {
	msg   string
	cause error
}

func (e *configError) Error() string { return "cachekit: invalid options: " + e.msg }

func (e *configError) Unwrap() []error {
	if e.cause == nil {
		return []error{ErrConfig}
	}
	return []error{ErrConfig, e.cause}
}

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

// MissError is what a read returns when FailOpen turned a Redis failure
// into a miss: errors.Is(err, ErrNotFound) holds (so GetOrLoad loads and
// callers that treat "not found" as "compute it" keep working), and
// errors.As(err, **BackendError) reaches the Redis failure for callers that
// want to know.
type MissError struct {
	// Err is the Redis failure (a *BackendError).
	Err error
}

// Error implements error.
func (e *MissError) Error() string {
	return "cachekit: redis unavailable, read degraded to a miss: " + e.Err.Error()
}

// Unwrap returns the Redis failure.
func (e *MissError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) hold.
func (e *MissError) Is(target error) bool { return target == ErrNotFound }

// BreakerState is the state of the circuit breaker in front of Redis
// (ReliabilityStats.Breaker).
type BreakerState int

// The breaker's states. Closed lets every call through; Open refuses calls
// without touching Redis until Redis is seen answering again (a background
// PING, Client.Ping, or tracking reconnecting) or BreakerOpenFor has passed;
// HalfOpen lets a few probe calls through, and their outcome closes or
// reopens it.
const (
	BreakerClosed   = BreakerState(guard.Closed)
	BreakerOpen     = BreakerState(guard.Open)
	BreakerHalfOpen = BreakerState(guard.HalfOpen)
)

// String returns "closed", "open" or "half-open".
func (s BreakerState) String() string { return guard.State(s).String() }

// NameKeyMismatchError is New's error when Redis holds, under the key
// prefix, the marker of another name key (or, at the marker's key,
// something that is not a marker): instances that would store one key
// under different names, so that a Delete on one would not reach another's
// copy. It matches ErrConfig. Marker is the marker's Redis key; Found and
// Want are fingerprints (they reveal nothing of the keys): what Redis
// holds ("not a marker" when it holds anything else, which is never
// quoted), and this Client's.
type NameKeyMismatchError struct {
	Marker, Found, Want string
}

// Error implements the error interface.
func (e *NameKeyMismatchError) Error() string {
	return "cachekit: redis holds the marker of another name key under this prefix (" + e.Marker +
		": fingerprint " + e.Found + ", this client's " + e.Want + "): rotating or turning on a name key is a cache flush, see docs/rotation.md"
}

// Is makes the error match ErrConfig.
func (e *NameKeyMismatchError) Is(target error) bool { return target == ErrConfig }

// errEmptyKey is what every call given the key "" returns, before any I/O.
var errEmptyKey = &protocol.FormatError{Op: "cache-key", Reason: "empty key", Err: protocol.ErrInvalidKey}
