package encryption

import (
	"bytes"
	"context"
	"errors"
	"testing"
)

// TestFlipEveryBit flips each bit of the nonce, ciphertext, tag and AAD of
// a sealed value in turn; every flip must fail authentication with no
// output, and the unflipped value must still open.
func TestFlipEveryBit(t *testing.T) {
	m := staticManager(t, "flip", testKeyHex)
	pt, aad := []byte("the quick brown fox"), []byte("\x03aad-bytes")
	sealed, _, err := m.EncryptNow(nil, pt, aad)
	if err != nil {
		t.Fatal(err)
	}
	region := func(i int) string {
		switch {
		case i < NonceSize:
			return "nonce"
		case i < len(sealed)-TagSize:
			return "ciphertext"
		}
		return "tag"
	}
	for i := range len(sealed) * 8 {
		bad := bytes.Clone(sealed)
		bad[i/8] ^= 1 << (i % 8)
		got, _, err := m.DecryptNow(nil, bad, aad)
		if !errors.Is(err, ErrAuthFailed) || got != nil {
			t.Fatalf("%s bit %d flipped: err=%v", region(i/8), i, err)
		}
	}
	for i := range len(aad) * 8 {
		bad := bytes.Clone(aad)
		bad[i/8] ^= 1 << (i % 8)
		if _, _, err := m.DecryptNow(nil, sealed, bad); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("aad bit %d flipped: err=%v", i, err)
		}
	}
	// AAD one byte longer or shorter.
	for _, bad := range [][]byte{aad[:len(aad)-1], append(bytes.Clone(aad), 0), nil} {
		if _, _, err := m.DecryptNow(nil, sealed, bad); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("aad of %d bytes: err=%v", len(bad), err)
		}
	}
	if got, _, err := m.DecryptNow(nil, sealed, aad); err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("original no longer opens: %v", err)
	}
	if st := m.Stats(); st.AuthFailures != uint64(len(sealed)*8+len(aad)*8+3) {
		t.Fatalf("AuthFailures = %d", st.AuthFailures)
	}
}

// TestTruncateEveryLength cuts a sealed value at every length: below
// Overhead it is a *LengthError, from Overhead on an authentication failure.
func TestTruncateEveryLength(t *testing.T) {
	m := staticManager(t, "cut", testKeyHex)
	aad := []byte("aad")
	sealed, _, _ := m.EncryptNow(nil, bytes.Repeat([]byte{0xab}, 40), aad)
	for n := range len(sealed) {
		got, _, err := m.DecryptNow(nil, sealed[:n], aad)
		var fe *LengthError
		if n < Overhead {
			if !errors.As(err, &fe) || fe.Len != n || fe.Op != "decrypt" {
				t.Fatalf("length %d: err=%v, want *LengthError", n, err)
			}
		} else if !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("length %d: err=%v, want ErrAuthFailed", n, err)
		}
		if got != nil {
			t.Fatalf("length %d: output returned", n)
		}
		// Appending a byte is no better.
		if n == len(sealed)-1 {
			if _, _, err := m.DecryptNow(nil, append(bytes.Clone(sealed), 0), aad); !errors.Is(err, ErrAuthFailed) {
				t.Fatalf("extended: %v", err)
			}
		}
	}
	if st := m.Stats(); st.LengthErrors != Overhead {
		t.Fatalf("LengthErrors = %d, want %d", st.LengthErrors, Overhead)
	}
}

// TestBoundarySizes round-trips plaintexts around the AES block size and
// checks the sealed length is always plaintext + Overhead.
func TestBoundarySizes(t *testing.T) {
	m := staticManager(t, "sizes", testKeyHex)
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 255, 256, 4095, 4096, 4097, 1 << 16} {
		pt := bytes.Repeat([]byte{byte(n)}, n)
		prefix := []byte("keep")
		sealed, _, err := m.EncryptNow(bytes.Clone(prefix), pt, nil)
		if err != nil || len(sealed) != len(prefix)+n+Overhead || !bytes.Equal(sealed[:4], prefix) {
			t.Fatalf("size %d: len %d, err %v", n, len(sealed), err)
		}
		got, _, err := m.DecryptNow(bytes.Clone(prefix), sealed[len(prefix):], nil)
		if err != nil || !bytes.Equal(got[len(prefix):], pt) || !bytes.Equal(got[:4], prefix) {
			t.Fatalf("size %d: round trip failed: %v", n, err)
		}
	}
}

// TestFailureClearsOutput checks that a failed decryption zeroes what it
// wrote into dst's spare capacity and leaves dst itself alone.
func TestFailureClearsOutput(t *testing.T) {
	m := staticManager(t, "clear", testKeyHex, "2222222222222222222222222222222222222222222222222222222222222222")
	pt := bytes.Repeat([]byte{0x5a}, 100)
	sealed, _, _ := m.EncryptNow(nil, pt, []byte("right"))
	buf := bytes.Repeat([]byte{0xee}, 8+len(pt))
	dst := buf[:8]
	got, _, err := m.DecryptNow(dst, sealed, []byte("wrong"))
	if !errors.Is(err, ErrAuthFailed) || got != nil {
		t.Fatalf("err=%v", err)
	}
	if !bytes.Equal(buf[:8], bytes.Repeat([]byte{0xee}, 8)) {
		t.Fatal("dst's own bytes were modified")
	}
	if !bytes.Equal(buf[8:], make([]byte, len(pt))) {
		t.Fatal("spare capacity not cleared after a failed decryption")
	}
}

func TestOverlap(t *testing.T) {
	m := staticManager(t, "overlap", testKeyHex)
	aad := []byte("aad")
	pt := []byte("0123456789abcdef0123")

	// Exact in-place sealing: plaintext sits NonceSize bytes into the
	// output, and the result opens.
	buf := make([]byte, NonceSize+len(pt)+TagSize)
	copy(buf[NonceSize:], pt)
	sealed, _, err := m.EncryptNow(buf[:0], buf[NonceSize:NonceSize+len(pt)], aad)
	if err != nil {
		t.Fatalf("in-place seal: %v", err)
	}
	if got, _, err := m.DecryptNow(nil, sealed, aad); err != nil || !bytes.Equal(got, pt) {
		t.Fatalf("in-place sealed value does not open: %v", err)
	}

	before := m.Stats().Encryptions
	cases := []struct {
		name string
		run  func() error
	}{
		{"seal plaintext at output start", func() error {
			b := make([]byte, 64)
			_, _, err := m.EncryptNow(b[:0], b[:10], aad)
			return err
		}},
		{"seal plaintext one byte off", func() error {
			b := make([]byte, 64)
			_, _, err := m.EncryptNow(b[:0], b[NonceSize+1:NonceSize+11], aad)
			return err
		}},
		{"seal aad inside output", func() error {
			b := make([]byte, 64)
			_, _, err := m.EncryptNow(b[:0], pt, b[40:44])
			return err
		}},
		{"open in place", func() error {
			s := bytes.Clone(sealed)
			_, _, err := m.DecryptNow(s[NonceSize:NonceSize], s, aad)
			return err
		}},
		{"open aad inside output", func() error {
			b := make([]byte, 64)
			_, _, err := m.DecryptNow(b[:0], sealed, b[0:3])
			return err
		}},
	}
	for _, c := range cases {
		if err := c.run(); !errors.Is(err, ErrOverlap) {
			t.Errorf("%s: err=%v, want ErrOverlap", c.name, err)
		}
	}
	if m.Stats().Encryptions != before {
		t.Fatal("a refused seal spent a nonce")
	}
}

func TestDecryptIndexWithPreviousKeys(t *testing.T) {
	keys := []string{
		"1111111111111111111111111111111111111111111111111111111111111111",
		"2222222222222222222222222222222222222222222222222222222222222222",
		"3333333333333333333333333333333333333333333333333333333333333333",
		"4444444444444444444444444444444444444444444444444444444444444444",
	}
	aad := []byte("aad")
	ring := staticManager(t, "rot", keys[0], keys[1:]...)
	for i, k := range keys {
		sealed, _, _ := staticManager(t, "rot", k).EncryptNow(nil, []byte{byte(i)}, aad)
		got, idx, err := ring.DecryptIndex(context.Background(), nil, sealed, aad)
		if err != nil || idx != i || !bytes.Equal(got, []byte{byte(i)}) {
			t.Fatalf("key %d: index %d err %v", i, idx, err)
		}
		// Sealed under key i, the wrong AAD fails on every key, opaquely.
		if _, _, err := ring.DecryptIndex(context.Background(), nil, sealed, []byte("other")); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("key %d, wrong aad: %v", i, err)
		}
	}
	if got := ring.Stats().DecryptsByKey; got != [4]uint64{1, 1, 1, 1} {
		t.Fatalf("DecryptsByKey = %v", got)
	}
	// A key outside the ring fails.
	sealed, _, _ := staticManager(t, "rot", "5555555555555555555555555555555555555555555555555555555555555555").EncryptNow(nil, []byte("x"), aad)
	checkRejects(t, ring, sealed, aad)
	// The same key with another tenant is another key.
	sealed, _, _ = staticManager(t, "other-tenant", keys[0]).EncryptNow(nil, []byte("x"), aad)
	checkRejects(t, ring, sealed, aad)
}

// TestChunkedPathIsTheOneShotBytes: around and above chunkedMin, the bytes
// sealed through the chunked path equal crypto/cipher's one-shot GCM for
// the same nonce, and each path opens the other's output; a tampered large
// message fails to open and leaves no plaintext.
func TestChunkedPathIsTheOneShotBytes(t *testing.T) {
	g := rawGCM(t)
	aad := []byte("aad v3 tenant key")
	for _, n := range []int{chunkedMin - 1, chunkedMin, chunkedMin + 1, chunkedMin + chunkSize + 5, 3<<20 + 7} {
		msg := bytes.Repeat([]byte{byte(n), 0x5a, 0xc3}, n/3+1)[:n]
		sealed, err := seal(g, newNonceSource(), nil, msg, aad)
		if err != nil {
			t.Fatal(err)
		}
		nonce := sealed[:NonceSize]
		if want := g.std.Seal(nil, nonce, msg, aad); !bytes.Equal(sealed[NonceSize:], want) {
			t.Fatalf("%d bytes: seal and one-shot GCM differ for the same nonce", n)
		}
		if pt, err := g.std.Open(nil, nonce, sealed[NonceSize:], aad); err != nil || !bytes.Equal(pt, msg) {
			t.Fatalf("%d bytes: one-shot Open of seal's output: %v", n, err)
		}
		oneShot := append(bytes.Clone(nonce), g.std.Seal(nil, nonce, msg, aad)...)
		if pt, _, err := openWith([]*aesGCM{g}, nil, oneShot, aad); err != nil || !bytes.Equal(pt, msg) {
			t.Fatalf("%d bytes: openWith of the one-shot output: %v", n, err)
		}
		sealed[NonceSize+n/2] ^= 1
		dst := make([]byte, 0, n)
		if pt, _, err := openWith([]*aesGCM{g}, dst, sealed, aad); err == nil || pt != nil || bytes.ContainsFunc(dst[:n], func(r rune) bool { return r != 0 }) {
			t.Fatalf("%d bytes: a tampered message opened or left plaintext (%v)", n, err)
		}
	}
}
