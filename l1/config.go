package l1

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strconv"
	"time"
)

// MaxTTLJitter is the largest accepted Config.TTLJitter: an entry's lifetime
// is never cut by more than half.
const MaxTTLJitter = 0.5

// Config describes a Cache. The zero value is not usable: MaxBytes is
// required. New copies the Config and never modifies the caller's value.
type Config struct {
	// MaxBytes bounds what the entries are charged: every entry is charged
	// EntryOverhead plus its value's bytes (a small value's record in the
	// value arena, a large one's capacity rounded up to Go's size class;
	// see the package doc); no copy of the key is kept.
	// FixedBytes(MaxBytes) comes on top, and what the charges leave out
	// (see the package doc; measured in bench/README.md, "L1 memory").
	// Required: must be > 0.
	MaxBytes int64

	// NumCounters is the number of TinyLFU frequency counters (about 3 bytes
	// each; ristretto rounds the count up to a power of two). Ten times the
	// number of entries the cache holds when full works well. default: the
	// largest power of two not above 10 × MaxBytes/256 (entries charged
	// about 256 bytes: EntryOverhead and a small value), clamped to
	// [1024, 1<<26]; 2 M for 64 MiB. Must not be negative.
	NumCounters int64

	// TTLJitter spreads expirations: each entry's TTL is shortened by a
	// random fraction in [0, TTLJitter). It must lie in [0, MaxTTLJitter].
	// default: 0 (entries live exactly their TTL).
	TTLJitter float64

	// Clock, when set, decides expiry: an entry is a miss once Clock() has
	// reached its expiry time. Meant for tests. default: nil (the monotonic
	// clock, read once per Get).
	Clock func() time.Time

	// Rand, when set, supplies the jitter fractions; it must return values
	// in [0, 1) (others are clamped). Meant for tests. default: nil
	// (math/rand/v2's Float64).
	Rand func() float64

	// Absent, when set, names the values that stand for no entry (the
	// client's cached "not found"): SetIfPresence and ExtendLatest treat a
	// key holding one as holding nothing. Get still returns them. default:
	// nil (every value is an entry).
	Absent func(val []byte) bool
}

// Defaults used when the corresponding Config field is zero.
const (
	defaultEntryBytes   = 256     // assumed average entry charge for NumCounters
	countersPerEntry    = 10      // ristretto's recommended counters per entry
	minNumCounters      = 1024    // floor so tiny caches still sample frequencies
	maxNumCounters      = 1 << 26 // ceiling for the default: about 200 MB of counters
	ristrettoBufferSize = 64      // ristretto BufferItems: per-stripe Get batch
)

// ConfigError reports an invalid Config field. It names the field and the
// rule it breaks; it never includes other configuration values.
type ConfigError struct {
	Field  string // Config field name, e.g. "MaxBytes"
	Reason string // the violated rule, e.g. "must be > 0"
}

// Error implements error.
func (e *ConfigError) Error() string {
	return "l1: invalid config: " + e.Field + " " + e.Reason
}

// settings is a validated Config with defaults applied.
type settings struct {
	maxBytes    int64
	numCounters int64
	jitter      float64
	clock       func() time.Time
	rand        func() float64
	absent      func([]byte) bool
}

// resolve validates cfg and fills in defaults.
func resolve(cfg Config) (settings, error) {
	switch {
	case cfg.MaxBytes <= 0:
		return settings{}, &ConfigError{Field: "MaxBytes", Reason: "must be > 0"}
	case cfg.NumCounters < 0:
		return settings{}, &ConfigError{Field: "NumCounters", Reason: "must not be negative"}
	case math.IsNaN(cfg.TTLJitter) || cfg.TTLJitter < 0 || cfg.TTLJitter > MaxTTLJitter:
		return settings{}, &ConfigError{
			Field:  "TTLJitter",
			Reason: "must be in [0, " + strconv.FormatFloat(MaxTTLJitter, 'g', -1, 64) + "]",
		}
	}
	s := settings{
		maxBytes:    cfg.MaxBytes,
		numCounters: cfg.NumCounters,
		jitter:      cfg.TTLJitter,
		clock:       cfg.Clock,
		rand:        cfg.Rand,
		absent:      cfg.Absent,
	}
	if s.numCounters == 0 {
		s.numCounters = defaultNumCounters(cfg.MaxBytes)
	}
	if s.rand == nil {
		s.rand = rand.Float64
	}
	return s, nil
}

// defaultNumCounters derives the counter count from the byte capacity: the
// largest power of two not above countersPerEntry per expected entry
// (within [minNumCounters, maxNumCounters]). Ristretto rounds its sketch
// width up to a power of two, so asking for 2.6 M counters (a 64 MiB cache)
// would build a 4 M-wide sketch, 12.9 MB of heap where 2 M take 8.8 MB. The
// ceiling is applied before multiplying, so huge capacities cannot overflow.
func defaultNumCounters(maxBytes int64) int64 {
	entries := min(maxBytes/defaultEntryBytes, maxNumCounters/countersPerEntry+1)
	want := min(max(entries*countersPerEntry, minNumCounters), maxNumCounters)
	return int64(1) << (bits.Len64(uint64(want)) - 1)
}

// jittered shortens ttl by a random fraction in [0, jitter). The result is
// at least 1ns for any positive ttl, so jitter never turns an entry into an
// immortal one (ristretto treats a zero TTL as "never expires").
func (s *settings) jittered(ttl time.Duration) time.Duration {
	if s.jitter == 0 {
		return ttl
	}
	r := s.rand()
	if !(r >= 0) { // also catches NaN
		r = 0
	}
	if r >= 1 {
		r = math.Nextafter(1, 0)
	}
	cut := time.Duration(float64(ttl) * s.jitter * r)
	return max(ttl-cut, 1)
}
