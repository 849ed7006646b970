package encryption

import (
	"crypto/aes"
	"crypto/cipher"
	"unsafe"

	"github.com/cachekit-io/cachekit-go/internal/gcmchunk"
)

// Sizes of the sealed format, in bytes. A sealed value is
//
//	nonce (NonceSize) ‖ ciphertext (as long as the plaintext) ‖ tag (TagSize)
//
// with no header, version or key id; the AAD is supplied by the caller on
// both sides and never stored.
const (
	// TagSize is the size of the AES-GCM authentication tag: 16 bytes.
	TagSize = 16

	// Overhead is how many bytes sealing adds to a plaintext: 28 bytes, the
	// nonce in front and the tag behind. It is also the shortest sealed
	// value there is (an empty plaintext).
	Overhead = NonceSize + TagSize

	// MaxPlaintextSize is the longest plaintext one AES-GCM message may
	// carry: 2^32-2 blocks of 16 bytes, about 64 GiB.
	MaxPlaintextSize = (1<<32 - 2) * aes.BlockSize
)

// Messages of chunkedMin bytes or more are sealed and opened in chunks of
// chunkSize bytes (internal/gcmchunk): the same bytes as one GCM call, but
// no single non-preemptible call runs longer than a chunk (about 25 µs at
// this machine's 2.6 GB/s), so a GC that starts during a large seal does
// not wait for all of it. Measured on the dev VM, 64 MiB: one-shot GCM
// 3.1-3.5 GB/s, chunked 2.5-2.8 GB/s; below 256 KiB a one-shot call ends
// within about 80 µs, and small values keep the one-shot path.
const (
	chunkSize  = 64 << 10
	chunkedMin = 256 << 10
)

// aesGCM is AES-256-GCM with a 12-byte nonce and 16-byte tag: crypto/cipher's
// for messages under chunkedMin, the chunked equivalent above.
type aesGCM struct {
	std cipher.AEAD
	big *gcmchunk.AEAD
}

// newAEAD builds AES-256-GCM for key. The caller clears key afterwards; the
// cipher keeps its own expanded copy.
func newAEAD(key *[KeySize]byte) (*aesGCM, error) {
	block, err := aes.NewCipher(key[:])
	if err != nil {
		return nil, configErr("key", "AES setup failed")
	}
	a, err := cipher.NewGCM(block)
	if err != nil {
		return nil, configErr("key", "AES-GCM setup failed")
	}
	big, err := gcmchunk.New(block, a, chunkSize)
	if err != nil {
		return nil, configErr("key", "AES-GCM setup failed")
	}
	return &aesGCM{std: a, big: big}, nil
}

// seal appends nonce ‖ ciphertext ‖ tag to dst, reserving the nonce from
// nonces. It validates every input before it reserves, so a refused call
// spends no nonce.
func seal(a *aesGCM, nonces *nonceSource, dst, plaintext, aad []byte) ([]byte, error) {
	if uint64(len(plaintext)) > MaxPlaintextSize {
		return nil, &LengthError{Op: "encrypt", Len: len(plaintext), Reason: "exceeds the AES-GCM message limit"}
	}
	ret, out := sliceForAppend(dst, Overhead+len(plaintext))
	body := out[NonceSize:]
	// The ciphertext may replace the plaintext exactly in place; any other
	// overlap (including with the nonce slot) would corrupt it, and AAD must
	// not overlap the output at all.
	if (anyOverlap(out, plaintext) && !sameStart(body, plaintext)) || anyOverlap(out, aad) {
		return nil, ErrOverlap
	}
	if err := nonces.reserve(out[:NonceSize]); err != nil {
		return nil, err
	}
	if len(plaintext) >= chunkedMin {
		a.big.Seal(body[:0], out[:NonceSize], plaintext, aad)
	} else {
		a.std.Seal(body[:0], out[:NonceSize], plaintext, aad)
	}
	return ret, nil
}

// openWith appends the plaintext of sealed to dst, trying each AEAD in order
// with the same AAD and stopping at the first that authenticates; it
// returns that AEAD's index. Only an authentication failure moves on to the
// next AEAD: a structural problem with sealed ends the call before any
// attempt. On failure it returns nil, and the bytes the attempts wrote past
// len(dst) are zero (cipher.AEAD.Open clears its output when the tag does
// not verify).
func openWith(aeads []*aesGCM, dst, sealed, aad []byte) ([]byte, int, error) {
	if len(sealed) < Overhead {
		return nil, 0, truncated("decrypt", len(sealed))
	}
	nonce, body := sealed[:NonceSize], sealed[NonceSize:]
	ret, out := sliceForAppend(dst, len(body)-TagSize)
	// No in-place decryption: a failed GCM open clears its output, which
	// would destroy the ciphertext the next keyring attempt needs.
	if anyOverlap(out, sealed) || anyOverlap(out, aad) {
		return nil, 0, ErrOverlap
	}
	big := len(body) >= chunkedMin+TagSize
	for i, a := range aeads {
		// Open, spelled out: a call through aesGCM.Open costs the L1 hit
		// about 25 instructions more (bench-ir).
		var err error
		if big {
			_, err = a.big.Open(out[:0], nonce, body, aad)
		} else {
			_, err = a.std.Open(out[:0], nonce, body, aad)
		}
		if err == nil {
			return ret, i, nil
		}
	}
	return nil, 0, ErrAuthFailed
}

// sliceForAppend extends in by n bytes, reallocating only when its capacity
// is short, and returns the whole slice and the n-byte tail.
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	return head, head[len(in):]
}

// anyOverlap reports whether x and y share any byte of memory.
func anyOverlap(x, y []byte) bool {
	return len(x) > 0 && len(y) > 0 &&
		uintptr(unsafe.Pointer(&x[0])) <= uintptr(unsafe.Pointer(&y[len(y)-1])) &&
		uintptr(unsafe.Pointer(&y[0])) <= uintptr(unsafe.Pointer(&x[len(x)-1]))
}

// sameStart reports whether x and y are non-empty and begin at the same
// byte: the exact in-place overlap the cipher supports.
func sameStart(x, y []byte) bool {
	return len(x) > 0 && len(y) > 0 && unsafe.Pointer(&x[0]) == unsafe.Pointer(&y[0])
}
