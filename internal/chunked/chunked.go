package chunked

import (
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/zeebo/xxh3"
)

// Size is the most bytes one assembly call is given: 64 KiB, about 10 µs
// of memmove or xxh3 on the dev VM.
const Size = 64 << 10

// observer, when set, hears the length of every piece handed to an
// assembly call (see Observe).
var observer atomic.Pointer[func(n int)]

// Observe makes every later piece handed to an assembly call, by this
// package and by callers that report through Note, call f with its length
// (pieces of inputs no longer than Size are not reported: they are bounded),
// until the returned function restores the previous observer. For tests
// that prove no call gets more than Size bytes.
func Observe(f func(n int)) (restore func()) {
	prev := observer.Swap(&f)
	return func() { observer.Store(prev) }
}

// oneShot, when set, makes every function here do its work in one call.
var oneShot atomic.Bool

// SetOneShot makes Copy, Clear, Append, Grow and XXH3 (and the callers that
// consult OneShot: AES-GCM, LZ4 decoding) do their work in one call each, as
// the built-ins and libraries they stand in for do, until it is called with
// false. It exists so that a benchmark can run the one-shot path beside the
// chunked one (serverbench --mode oneshot); nothing else should call it.
func SetOneShot(on bool) { oneShot.Store(on) }

// OneShot reports whether SetOneShot(true) is in effect.
func OneShot() bool { return oneShot.Load() }

// Note reports a piece of n bytes handed to an assembly call elsewhere
// (AES-GCM chunks, LZ4 blocks) to the observer, if any.
func Note(n int) {
	if f := observer.Load(); f != nil {
		(*f)(n)
	}
}

// Copy is the built-in copy in pieces of at most Size bytes. dst and src
// may overlap only when dst starts at or before src.
func Copy(dst, src []byte) int {
	if len(src) <= Size || len(dst) <= Size {
		return copy(dst, src)
	}
	return copyPieces(dst, src)
}

func copyPieces(dst, src []byte) int {
	if oneShot.Load() {
		return copy(dst, src)
	}
	n := min(len(dst), len(src))
	for off := 0; off < n; off += Size {
		end := min(off+Size, n)
		Note(end - off)
		copyPiece(dst[off:end], src[off:end])
	}
	return n
}

// copyPiece is one bounded copy. It must stay a real call: its prologue
// is where a goroutine that the runtime asked to stop (for a GC, say)
// notices. A loop of inlined copies has no such point, and the runtime's
// fallback, a signal, almost always lands inside memmove, where it cannot
// stop the goroutine, so the loop would run to its end as one stretch.
//
//go:noinline
func copyPiece(dst, src []byte) { copy(dst, src) }

// Clear is the built-in clear in pieces of at most Size bytes. It inlines
// to a plain clear for a small b.
func Clear(b []byte) {
	if len(b) <= Size {
		clear(b)
		return
	}
	clearPieces(b)
}

func clearPieces(b []byte) {
	if oneShot.Load() {
		clear(b)
		return
	}
	for off := 0; off < len(b); off += Size {
		end := min(off+Size, len(b))
		Note(end - off)
		clearPiece(b[off:end])
	}
}

// clearPiece is one bounded clear, a real call for the reason copyPiece is.
//
//go:noinline
func clearPiece(b []byte) { clear(b) }

// Append is append(dst, src...) with the copy done by Copy. src must not
// overlap dst's spare capacity. It inlines to a plain append for a small
// src.
func Append(dst, src []byte) []byte {
	if len(src) <= Size {
		return append(dst, src...)
	}
	return appendPieces(dst, src)
}

func appendPieces(dst, src []byte) []byte {
	if oneShot.Load() {
		return append(dst, src...)
	}
	n := len(dst)
	if cap(dst)-n < len(src) {
		// A fresh allocation: the runtime zeroes large ones in
		// preemptible pieces.
		grown := make([]byte, n, n+len(src))
		Copy(grown, dst)
		dst = grown
	}
	dst = dst[:n+len(src)]
	Copy(dst[n:], src)
	return dst
}

// Grow is slices.Grow for bytes: it guarantees room for n more bytes.
// slices.Grow of a large n clears the new memory in one call the runtime
// cannot preempt (about 60 ms for 64 MiB from a nil slice); here a large
// growth is a make, which the runtime zeroes in preemptible pieces, and a
// Copy of what dst held.
func Grow(dst []byte, n int) []byte {
	if n <= Size || cap(dst)-len(dst) >= n {
		return slices.Grow(dst, n)
	}
	return growPieces(dst, n)
}

func growPieces(dst []byte, n int) []byte {
	if oneShot.Load() {
		return slices.Grow(dst, n)
	}
	grown := make([]byte, len(dst), len(dst)+n)
	Copy(grown, dst)
	return grown
}

// Bytes returns a copy of s, as []byte(s) does.
func Bytes(s string) []byte {
	if len(s) <= Size {
		return []byte(s)
	}
	return AppendString(make([]byte, 0, len(s)), s)
}

// AppendString is Append for a string source.
func AppendString(dst []byte, s string) []byte {
	return Append(dst, unsafe.Slice(unsafe.StringData(s), len(s)))
}

// XXH3 returns xxh3.Hash(b), hashing at most Size bytes per call. It
// inlines to xxh3.Hash for a small b.
func XXH3(b []byte) uint64 {
	if len(b) <= Size {
		return xxh3.Hash(b)
	}
	return xxh3Pieces(b)
}

func xxh3Pieces(b []byte) uint64 {
	if oneShot.Load() {
		return xxh3.Hash(b)
	}
	h := xxh3.New()
	for off := 0; off < len(b); off += Size {
		end := min(off+Size, len(b))
		Note(end - off)
		_, _ = h.Write(b[off:end])
	}
	return h.Sum64()
}
