package encryption

import (
	"encoding/hex"
	"sync/atomic"

	"github.com/cachekit-io/cachekit-go/internal/stripe"
)

// Stats is a snapshot of a Manager's counters and key identity. It holds no
// key material: fingerprints are one-way and are the identifiers the
// protocol publishes for keys.
type Stats struct {
	// Ready reports whether keys are derived and the Manager is open.
	Ready bool
	// Closed reports whether Close has been called.
	Closed bool
	// KeyringSize is the number of keys derived: 1 (the current key) plus
	// the previous keys; 0 before the first successful derivation.
	KeyringSize int

	// Encryptions counts values sealed under the current key (equal to the
	// nonces it has used).
	Encryptions uint64
	// NonceExhausted reports that the current key can seal nothing more.
	NonceExhausted bool
	// DecryptsByKey counts successful decryptions per keyring entry: [0]
	// the current key, [i] PreviousKeys[i-1]. Traffic on i > 0 shows how
	// much data still depends on a retired key.
	DecryptsByKey [1 + MaxPreviousKeys]uint64
	// AuthFailures counts decryptions that no key authenticated.
	AuthFailures uint64
	// LengthErrors counts decryptions refused before any attempt because
	// the sealed value was malformed (too short).
	LengthErrors uint64
	// DerivationFailures counts key derivations that failed (provider error
	// or refused keys).
	DerivationFailures uint64

	// Fingerprint identifies the current derived encryption key, as 32
	// lowercase hex digits (the form the protocol vectors use); "" before
	// the first successful derivation. Fingerprint (the function) computes
	// the same value as bytes.
	Fingerprint string
	// PreviousFingerprints identify the decrypt-only keys, in order, in the
	// same form.
	PreviousFingerprints []string
}

// paddedCounter keeps a counter on its own cache line so concurrent
// decryptions that bump different counters do not contend.
type paddedCounter struct {
	n atomic.Uint64
	_ [56]byte
}

// counters are a Manager's statistics. Encryptions are not counted here:
// the nonce counter already counts them, at no extra cost.
type counters struct {
	last atomic.Pointer[keyringInfo] // what Stats reports of the derived keyring; no key

	decrypts           [maxKeyring]stripe.Counter // bumped on every decrypt, from every core
	authFailures       paddedCounter
	lengthErrors       atomic.Uint64
	derivationFailures atomic.Uint64
}

// failure records a failed decryption by its class.
func (c *counters) failure(err error) {
	// The errors come straight from openWith, unwrapped; a type switch
	// keeps this path free of allocations.
	if err == ErrAuthFailed {
		c.authFailures.n.Add(1)
	} else if _, ok := err.(*LengthError); ok {
		c.lengthErrors.Add(1)
	}
}

// Stats returns a snapshot of the Manager's counters. Each field is read
// atomically; the snapshot as a whole is not.
func (m *Manager) Stats() Stats {
	s := Stats{
		Ready:              m.state.Load() != nil,
		AuthFailures:       m.stats.authFailures.n.Load(),
		LengthErrors:       m.stats.lengthErrors.Load(),
		DerivationFailures: m.stats.derivationFailures.Load(),
	}
	m.mu.Lock()
	s.Closed = m.closed
	m.mu.Unlock()
	for i := range s.DecryptsByKey {
		s.DecryptsByKey[i] = m.stats.decrypts[i].Load()
	}
	if r := m.stats.last.Load(); r != nil {
		s.KeyringSize = r.size
		s.Encryptions = r.nonces.used()
		s.NonceExhausted = r.nonces.exhausted()
		s.Fingerprint = hex.EncodeToString(r.fingerprints[0][:])
		for _, fp := range r.fingerprints[1:] {
			s.PreviousFingerprints = append(s.PreviousFingerprints, hex.EncodeToString(fp[:]))
		}
	}
	return s
}

// KeyFingerprint returns the hex fingerprint of keyring entry i (0 the
// current key, 1 and up the previous keys in order, as DecryptIndex
// reports them), "" when there is no such entry or no keys were derived.
func (m *Manager) KeyFingerprint(i int) string {
	if r := m.stats.last.Load(); r != nil && i >= 0 && i < len(r.fingerprints) {
		return hex.EncodeToString(r.fingerprints[i][:])
	}
	return ""
}

// keyringInfo is what Stats reports of a derived keyring, kept after Close
// so the counters stay readable: its size, fingerprints and nonce counter,
// and no AES-GCM instance (after Close nothing reachable from the Manager
// can decrypt).
type keyringInfo struct {
	size         int
	fingerprints [][FingerprintSize]byte
	nonces       *nonceSource
}

func infoOf(r *keyring) *keyringInfo {
	return &keyringInfo{size: r.size(), fingerprints: r.fingerprints, nonces: r.nonces}
}
