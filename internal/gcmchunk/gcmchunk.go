package gcmchunk

import (
	"crypto/cipher"
	"crypto/subtle"
	"encoding/binary"
	"errors"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

const (
	// NonceSize and TagSize are those of the GCM this package reproduces.
	NonceSize = 12
	TagSize   = 16

	blockSize = 16
)

// ErrOpen is returned by Open when the message does not authenticate.
var ErrOpen = errors.New("gcmchunk: message authentication failed")

// AEAD seals and opens in chunks of a fixed size. It is safe for concurrent
// use.
type AEAD struct {
	block cipher.Block
	gcm   cipher.AEAD // the standard GCM under the same key, for GHASH
	chunk int
	h     elem // the hash key E_K(0^128)
	hn    elem // H^(chunk/16)
	ej0z  elem // E_K(0^96‖1): J0 of the all-zero nonce the GHASH calls use
}

// New returns an AEAD over block (an AES cipher) that processes chunk bytes
// per call; chunk must be a positive multiple of 16. gcm must be
// cipher.NewGCM(block): its Seal computes each chunk's GHASH.
func New(block cipher.Block, gcm cipher.AEAD, chunk int) (*AEAD, error) {
	if block.BlockSize() != blockSize || gcm.NonceSize() != NonceSize || gcm.Overhead() != TagSize {
		return nil, errors.New("gcmchunk: want AES with a 12-byte-nonce, 16-byte-tag GCM")
	}
	if chunk <= 0 || chunk%blockSize != 0 {
		return nil, errors.New("gcmchunk: chunk must be a positive multiple of 16")
	}
	a := &AEAD{block: block, gcm: gcm, chunk: chunk}
	var b [blockSize]byte
	block.Encrypt(b[:], b[:])
	a.h = load(b[:])
	a.hn = pow(a.h, chunk/blockSize)
	b = [blockSize]byte{15: 1}
	block.Encrypt(b[:], b[:])
	a.ej0z = load(b[:])
	return a, nil
}

// Chunk returns the number of bytes each call processes.
func (a *AEAD) Chunk() int { return a.chunk }

// Seal encrypts and authenticates plaintext, authenticates aad, appends
// ciphertext‖tag to dst and returns the result, exactly as
// cipher.NewGCM(block).Seal does. plaintext and dst may overlap exactly
// (dst[len(dst):] at plaintext[0]) or not at all.
func (a *AEAD) Seal(dst, nonce, plaintext, aad []byte) []byte {
	if len(nonce) != NonceSize {
		panic("gcmchunk: incorrect nonce length")
	}
	if chunked.OneShot() {
		return a.gcm.Seal(dst, nonce, plaintext, aad)
	}
	ret, out := sliceForAppend(dst, len(plaintext)+TagSize)
	ctr := cipher.NewCTR(a.block, counter(nonce, 2))
	z := a.absorb(elem{}, aad)
	for off := 0; off < len(plaintext); off += a.chunk {
		end := min(off+a.chunk, len(plaintext))
		chunked.Note(end - off) // the size each of the two calls is given
		ctr.XORKeyStream(out[off:end], plaintext[off:end])
		z = a.absorb(z, out[off:end])
	}
	t := a.tag(z, nonce, len(aad), len(plaintext))
	copy(out[len(plaintext):], t[:])
	return ret
}

// Open authenticates ciphertext‖tag and aad and, only if they verify,
// decrypts into dst's spare capacity and returns the extended slice, as
// cipher.NewGCM(block).Open does. On failure it returns ErrOpen and writes
// nothing: every chunk is authenticated before any is decrypted.
func (a *AEAD) Open(dst, nonce, sealed, aad []byte) ([]byte, error) {
	if len(nonce) != NonceSize {
		panic("gcmchunk: incorrect nonce length")
	}
	if len(sealed) < TagSize {
		return nil, ErrOpen
	}
	if chunked.OneShot() {
		out, err := a.gcm.Open(dst, nonce, sealed, aad)
		if err != nil {
			return nil, ErrOpen
		}
		return out, nil
	}
	ct, want := sealed[:len(sealed)-TagSize], sealed[len(sealed)-TagSize:]
	z := a.absorb(elem{}, aad)
	for off := 0; off < len(ct); off += a.chunk {
		end := min(off+a.chunk, len(ct))
		chunked.Note(end - off)
		z = a.absorb(z, ct[off:end])
	}
	t := a.tag(z, nonce, len(aad), len(ct))
	if subtle.ConstantTimeCompare(t[:], want) != 1 {
		return nil, ErrOpen
	}
	ret, out := sliceForAppend(dst, len(ct))
	ctr := cipher.NewCTR(a.block, counter(nonce, 2))
	for off := 0; off < len(ct); off += a.chunk {
		end := min(off+a.chunk, len(ct))
		chunked.Note(end - off)
		ctr.XORKeyStream(out[off:end], ct[off:end])
	}
	return ret, nil
}

// absorb returns z·H^n ⊕ S·H for seg's n blocks (seg zero-padded to a
// whole block, as GCM pads the AAD and the ciphertext), where S·H comes
// from the standard GCM's GHASH of seg. Every seg but a message's last
// must be a whole number of blocks.
func (a *AEAD) absorb(z elem, seg []byte) elem {
	if len(seg) == 0 {
		return z
	}
	var zero [NonceSize]byte
	var buf [TagSize]byte
	t := load(a.gcm.Seal(buf[:0], zero[:], nil, seg))
	sh := t.xor(a.ej0z).xor(mul(elem{hi: uint64(len(seg)) * 8}, a.h))
	n := (len(seg) + blockSize - 1) / blockSize
	hn := a.hn
	if n*blockSize != a.chunk {
		hn = pow(a.h, n)
	}
	return mul(z, hn).xor(sh)
}

// tag finishes GHASH with the length block and masks it with E_K(J0).
func (a *AEAD) tag(z elem, nonce []byte, aadLen, ctLen int) [TagSize]byte {
	ghash := z.xor(mul(elem{hi: uint64(aadLen) * 8, lo: uint64(ctLen) * 8}, a.h))
	var j0 [blockSize]byte
	copy(j0[:], counter(nonce, 1))
	a.block.Encrypt(j0[:], j0[:])
	var out [TagSize]byte
	ghash.xor(load(j0[:])).store(out[:])
	return out
}

// counter returns nonce‖i as GCM's 16-byte counter block.
func counter(nonce []byte, i uint32) []byte {
	b := make([]byte, blockSize)
	copy(b, nonce)
	binary.BigEndian.PutUint32(b[NonceSize:], i)
	return b
}

// sliceForAppend extends in by n bytes and returns the whole slice and the
// n-byte tail (crypto/cipher's helper).
func sliceForAppend(in []byte, n int) (head, tail []byte) {
	if total := len(in) + n; cap(in) >= total {
		head = in[:total]
	} else {
		head = make([]byte, total)
		copy(head, in)
	}
	return head, head[len(in):]
}
