package protocol

import "time"

// MaxTTL is the longest time-to-live the protocol lets a caller state:
// 2,592,000 seconds (30 days). It bounds a stated TTL, not how long an entry
// may live: "never expire" is requested by stating no TTL at all.
const MaxTTL = 2592000 * time.Second

// NormalizeTTL applies the protocol's rules to a caller-stated TTL and
// returns the TTL to store, in whole seconds:
//
//   - zero is an error: CacheKit never reads 0 as "no expiry" or "already
//     expired", because cache systems disagree on what it means;
//   - a negative duration is an error;
//   - anything above MaxTTL is an error;
//   - everything else is rounded up to the next whole second, so a
//     sub-second TTL becomes 1 s and is never truncated to 0.
//
// Errors match ErrInvalidTTL (and are not *FormatError values: a TTL is a
// caller's argument, not bytes of a format).
func NormalizeTTL(d time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return 0, ttlErr("ttl is zero")
	case d < 0:
		return 0, ttlErr("ttl is negative")
	case d > MaxTTL:
		return 0, ttlErr("ttl exceeds 2592000 s (30 days)")
	}
	// d is in (0, MaxTTL], so the ceiling cannot overflow or pass MaxTTL.
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	return d, nil
}

// ttlError is an invalid TTL: it matches ErrInvalidTTL and says why.
type ttlError struct{ reason string }

func ttlErr(reason string) error { return &ttlError{reason} }

func (e *ttlError) Error() string { return ErrInvalidTTL.Error() + ": " + e.reason }
func (e *ttlError) Unwrap() error { return ErrInvalidTTL }
