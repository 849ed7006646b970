package cachekit

import (
	"encoding/hex"
	"testing"

	"golang.org/x/crypto/blake2b"
)

// TestKeyDigestIsKeyed: the digest logs show for a key cannot be matched
// against guessed keys without the Client's digest key (the unkeyed
// BLAKE2b prefix it used to be let "session:user:4242" be recovered in
// milliseconds); with a static master key every Client of the fleet agrees
// on it, other tenants and keyless Clients do not.
func TestKeyDigestIsKeyed(t *testing.T) {
	t.Parallel()
	const key = "session:user:4242"
	unkeyed := blake2b.Sum256([]byte(key))
	a := newClient(t, Options{L1MaxBytes: 1 << 10, Encryption: encConfig("")})
	b := newClient(t, Options{L1MaxBytes: 1 << 10, Encryption: encConfig("")})
	if a.KeyDigest(key) == hex.EncodeToString(unkeyed[:8]) {
		t.Fatal("KeyDigest is the unkeyed BLAKE2b prefix: enumerable from guessed keys")
	}
	if a.KeyDigest(key) != b.KeyDigest(key) || len(a.KeyDigest(key)) != 16 {
		t.Fatalf("two Clients with the same master key disagree: %s vs %s", a.KeyDigest(key), b.KeyDigest(key))
	}
	other := newClient(t, Options{L1MaxBytes: 1 << 10, Encryption: encConfig("t2")})
	p1 := newClient(t, Options{L1MaxBytes: 1 << 10})
	p2 := newClient(t, Options{L1MaxBytes: 1 << 10})
	if other.KeyDigest(key) == a.KeyDigest(key) || p1.KeyDigest(key) == p2.KeyDigest(key) {
		t.Fatal("digests agree across tenants, or across keyless Clients")
	}
	if first, again := p1.KeyDigest(key), p1.KeyDigest(key); first != again || first == p1.KeyDigest(key+"x") {
		t.Fatal("a Client's digest is not stable, or not per key")
	}
}
