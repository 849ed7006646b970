package encryption

import (
	"crypto/rand"
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
)

// NonceSize is the size of an AES-GCM nonce: 12 bytes (96 bits), the first
// 12 bytes of every sealed value.
const NonceSize = 12

// counterLimit is the first counter value that is never handed out. A
// reservation at or above it fails; the counter field is 32 bits wide and
// never wraps.
const counterLimit = math.MaxUint32

// instanceIDs hands out the 8-byte instance part of nonces. The sequence is
// process-wide and starts at a random 64-bit value drawn once, so two
// nonce sources in one process never share an instance id (until 2^64 of
// them have been made) and two processes are unlikely to start near each
// other.
var instanceIDs struct {
	once sync.Once
	next atomic.Uint64
}

// nextInstanceID returns a fresh instance id.
func nextInstanceID() uint64 {
	instanceIDs.once.Do(func() {
		var seed [8]byte
		_, _ = rand.Read(seed[:]) // crypto/rand.Read never fails (it crashes the program instead)
		instanceIDs.next.Store(binary.BigEndian.Uint64(seed[:]))
	})
	return instanceIDs.next.Add(1)
}

// nonceSource produces the nonces of one encryption key:
//
//	nonce = instance id (8 bytes, big-endian) ‖ counter (4 bytes, big-endian)
//
// Its rules, which no caller can bypass:
//
//   - a nonce is reserved with a single atomic add before anything is
//     sealed, so concurrent callers always get distinct counters;
//   - counters strictly increase from the start value;
//   - a reservation of counterLimit or more fails with ErrNonceExhausted,
//     and since the 64-bit reservation count only grows, so does every later
//     one: exhaustion is sticky and the 32-bit field never wraps.
//
// A source belongs to exactly one derived key; a new key gets a new source
// with a new instance id.
type nonceSource struct {
	instance uint64
	start    uint64 // the first counter value handed out (0 outside tests)
	_        [48]byte
	next     atomic.Uint64 // the counter the next reservation takes
	_        [56]byte      // keep the hot counter on its own cache line
}

// newNonceSource returns a source with a fresh instance id whose counter
// starts at zero.
func newNonceSource() *nonceSource {
	return &nonceSource{instance: nextInstanceID()}
}

// reserve writes the next nonce into nonce, which must be NonceSize bytes.
// On ErrNonceExhausted nonce is left untouched.
func (s *nonceSource) reserve(nonce []byte) error {
	c := s.next.Add(1) - 1
	if c >= counterLimit {
		return ErrNonceExhausted
	}
	binary.BigEndian.PutUint64(nonce[:8], s.instance)
	binary.BigEndian.PutUint32(nonce[8:NonceSize], uint32(c))
	return nil
}

// used reports how many nonces the source has handed out.
func (s *nonceSource) used() uint64 {
	n := min(s.next.Load(), counterLimit)
	if n < s.start {
		return 0
	}
	return n - s.start
}

// exhausted reports whether the next reservation would fail.
func (s *nonceSource) exhausted() bool { return s.next.Load() >= counterLimit }

// setForTest positions the source so its next nonce is instance ‖ counter.
// Tests use it to reproduce a vector's nonce through the real reservation
// path and to start near exhaustion. It must not race with reserve.
func (s *nonceSource) setForTest(instance uint64, counter uint64) {
	s.instance = instance
	s.start = counter
	s.next.Store(counter)
}

// ParseNonce splits the nonce at the front of a sealed value into its
// instance id and counter, for inspection tools. It checks the length only:
// it does not authenticate anything. A nonce written by another SDK that
// used random nonces parses too, into meaningless numbers. Errors are
// *LengthError.
func ParseNonce(sealed []byte) (instanceID uint64, counter uint32, err error) {
	if len(sealed) < Overhead {
		return 0, 0, truncated("parse nonce", len(sealed))
	}
	return binary.BigEndian.Uint64(sealed[:8]), binary.BigEndian.Uint32(sealed[8:NonceSize]), nil
}
