package gcmchunk

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"math/rand/v2"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

func pair(t testing.TB, key []byte, chunk int) (cipher.AEAD, *AEAD) {
	t.Helper()
	block, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	std, err := cipher.NewGCM(block)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(block, std, chunk)
	if err != nil {
		t.Fatal(err)
	}
	return std, a
}

func randBytes(r *rand.ChaCha8, n int) []byte {
	b := make([]byte, n)
	_, _ = r.Read(b)
	return b
}

// check seals msg both ways, compares the bytes, and opens each one's
// output with the other; then every tamper class fails to open and writes
// nothing.
func check(t *testing.T, std cipher.AEAD, a *AEAD, nonce, msg, aad []byte) {
	t.Helper()
	want := std.Seal(nil, nonce, msg, aad)
	got := a.Seal(nil, nonce, msg, aad)
	if !bytes.Equal(got, want) {
		t.Fatalf("len %d aad %d chunk %d: sealed bytes differ from crypto/cipher's", len(msg), len(aad), a.chunk)
	}
	pt, err := a.Open(nil, nonce, want, aad)
	if err != nil || !bytes.Equal(pt, msg) {
		t.Fatalf("len %d chunk %d: Open of crypto/cipher's output = %v", len(msg), a.chunk, err)
	}
	// In place, as cipher.AEAD allows.
	buf := append([]byte(nil), msg...)
	buf = append(buf, make([]byte, TagSize)...)
	if inPlace := a.Seal(buf[:0], nonce, buf[:len(msg)], aad); !bytes.Equal(inPlace, want) {
		t.Fatalf("len %d chunk %d: in-place Seal differs", len(msg), a.chunk)
	}
	tampered := func(what string, nonce, sealed, aad []byte) {
		t.Helper()
		dst := make([]byte, 0, len(sealed)+8)
		if out, err := a.Open(dst, nonce, sealed, aad); err != ErrOpen || out != nil {
			t.Fatalf("len %d chunk %d: %s opened (%v)", len(msg), a.chunk, what, err)
		}
		if bytes.ContainsFunc(dst[:cap(dst)], func(r rune) bool { return r != 0 }) {
			t.Fatalf("len %d chunk %d: %s: failed Open wrote into dst", len(msg), a.chunk, what)
		}
	}
	for _, i := range []int{0, len(want) / 2, len(want) - TagSize - 1, len(want) - 1} {
		if i < 0 {
			continue
		}
		bad := bytes.Clone(want)
		bad[i] ^= 0x01
		tampered("a flipped bit", nonce, bad, aad)
	}
	tampered("a truncated message", nonce, want[:len(want)-1], aad)
	tampered("an extended message", nonce, append(bytes.Clone(want), 0), aad)
	tampered("other AAD", nonce, want, append(bytes.Clone(aad), 0))
	otherNonce := bytes.Clone(nonce)
	otherNonce[11] ^= 0x80
	tampered("another nonce", otherNonce, want, aad)
}

// TestMatchesStdlibEveryLength: every message length 0-4 KiB, at chunk
// sizes that put a chunk boundary at every block position, and AAD
// lengths around block boundaries.
func TestMatchesStdlibEveryLength(t *testing.T) {
	r := rand.NewChaCha8([32]byte{1})
	key := randBytes(r, 32)
	for _, chunk := range []int{16, 48, 1024} {
		std, a := pair(t, key, chunk)
		for n := 0; n <= 4096; n++ {
			aad := randBytes(r, []int{0, 1, 15, 16, 17, 33, 100}[n%7])
			check(t, std, a, randBytes(r, NonceSize), randBytes(r, n), aad)
		}
	}
}

// TestMatchesStdlibLarge: random lengths up to 3 MiB at the production
// chunk size and at an odd multiple of the block size.
func TestMatchesStdlibLarge(t *testing.T) {
	r := rand.NewChaCha8([32]byte{2})
	key := randBytes(r, 32)
	for _, chunk := range []int{64 << 10, 16 * 1013} {
		std, a := pair(t, key, chunk)
		for range 6 {
			n := int(r.Uint64() % (3 << 20))
			check(t, std, a, randBytes(r, NonceSize), randBytes(r, n), randBytes(r, int(r.Uint64()%80)))
		}
		for _, n := range []int{chunk - 1, chunk, chunk + 1, 2 * chunk, 2*chunk + 15} {
			check(t, std, a, randBytes(r, NonceSize), randBytes(r, n), nil)
		}
	}
}

func TestNewRefusesBadChunks(t *testing.T) {
	block, _ := aes.NewCipher(make([]byte, 32))
	std, _ := cipher.NewGCM(block)
	for _, c := range []int{0, -16, 8, 17} {
		if _, err := New(block, std, c); err == nil {
			t.Errorf("chunk %d accepted", c)
		}
	}
	short, _ := cipher.NewGCMWithTagSize(block, 12)
	if _, err := New(block, short, 16); err == nil {
		t.Error("a 12-byte-tag GCM accepted")
	}
}

func TestFieldAgainstRepeatedAddition(t *testing.T) {
	// pow agrees with repeated multiplication, and 1 is the identity.
	r := rand.NewChaCha8([32]byte{3})
	h := load(randBytes(r, 16))
	if got := mul(h, elem{hi: 1 << 63}); got != h {
		t.Fatal("1·h != h")
	}
	acc := elem{hi: 1 << 63}
	for n := 1; n <= 40; n++ {
		acc = mul(acc, h)
		if pow(h, n) != acc {
			t.Fatalf("pow(h, %d) differs from %d multiplications", n, n)
		}
	}
}

// TestWycheproof runs Wycheproof's AES-256-GCM cases (96-bit IV, 128-bit
// tag) through the chunked path with a 16-byte chunk, so every case's
// every block boundary is a chunk boundary.
func TestWycheproof(t *testing.T) {
	n := 0
	for _, tc := range vectors.WycheproofAESGCM256(t) {
		n++
		_, a := pair(t, tc.Key, 16)
		sealed := append(bytes.Clone(tc.CT), tc.Tag...)
		pt, err := a.Open(nil, tc.IV, sealed, tc.AAD)
		switch tc.Result {
		case "valid":
			if err != nil || !bytes.Equal(pt, tc.Msg) {
				t.Errorf("tc %d: valid case did not open", tc.TcID)
			}
			if got := a.Seal(nil, tc.IV, tc.Msg, tc.AAD); !bytes.Equal(got, sealed) {
				t.Errorf("tc %d: Seal differs", tc.TcID)
			}
		case "invalid":
			if err == nil {
				t.Errorf("tc %d: invalid case opened", tc.TcID)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d Wycheproof cases ran", n)
	}
}

// FuzzMatchesStdlib: any key, nonce, AAD, message and chunk size seal to
// crypto/cipher's bytes, and any bytes open under the chunked path exactly
// when they open under crypto/cipher's.
func FuzzMatchesStdlib(f *testing.F) {
	f.Add(make([]byte, 32), make([]byte, 12), []byte("aad"), []byte("hello"), uint8(1))
	f.Add(make([]byte, 32), make([]byte, 12), []byte{}, bytes.Repeat([]byte{7}, 100), uint8(3))
	f.Fuzz(func(t *testing.T, key, nonce, aad, msg []byte, c uint8) {
		if len(key) != 32 || len(nonce) != NonceSize {
			return
		}
		std, a := pair(t, key, 16*(int(c)%8+1))
		if got, want := a.Seal(nil, nonce, msg, aad), std.Seal(nil, nonce, msg, aad); !bytes.Equal(got, want) {
			t.Fatal("sealed bytes differ")
		}
		got, err1 := a.Open(nil, nonce, msg, aad)
		want, err2 := std.Open(nil, nonce, msg, aad)
		if (err1 == nil) != (err2 == nil) || !bytes.Equal(got, want) {
			t.Fatal("Open disagrees with crypto/cipher on arbitrary input")
		}
	})
}
