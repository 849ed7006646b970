package l1

import (
	"math"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// entry is what ristretto stores and the index finds: the current value
// with its expiry, plus the bookkeeping that read-your-write, in-place
// rewrites and the ristretto callbacks need. It is 48 bytes, a size class,
// one allocation per entry, and holds no copy of the key: hash and check
// identify it (see keyHash).
//
// The value is three words (its data pointer, length and expiry) that a
// rewrite replaces in place under a sequence counter, so that a Get reads
// them consistently without a lock and a rewrite neither allocates nor
// keeps the replaced value alive.
type entry struct {
	// hash is the key's hash: its index slot, and its key in ristretto.
	hash uint64
	// touched counts the Gets that reported the entry to ristretto in
	// the current window (see touchHit).
	touched atomic.Uint64
	// data points at the value's first byte (nil for an empty value).
	data atomic.Pointer[byte]
	// exp is the value's expiry (see Cache.now).
	exp atomic.Int64
	// check is the rest of the key's fingerprint.
	check uint32
	// meta holds the entry's flags (below) and, above them, the bytes
	// charged for its value in units of 8 (allocSize is a multiple of 8).
	meta atomic.Uint32
	// seq is odd while a rewrite stores data, n and exp (see load).
	seq atomic.Uint32
	// n is the value's length.
	n atomic.Uint32
}

// maxValueLen is the longest value an entry holds (entry.n's range).
const maxValueLen = math.MaxUint32

// Entry flags, in entry.meta.
const (
	// entryDeleted: taken out of the index by Delete or a failed write,
	// which also queued a delete in ristretto. Ristretto must not let a
	// later write replace it (see shouldUpdate).
	entryDeleted = 1 << iota
	// entryUpdated: ristretto's store took the entry synchronously, in
	// place of the key's previous entry (see shouldUpdate).
	entryUpdated
	// entryRejected: ristretto's admission refused the entry.
	entryRejected
	// entryAwaited: the entry's Set waits for the verdict (see put), so a
	// refusal is the Set's to handle, not a refusal after it returned.
	entryAwaited
	// entryQueued: the entry is in ristretto's write buffer, counted in
	// Cache.queued until ristretto takes it (see dequeued).
	entryQueued
	entryFlagBits = 5
	// maxValueCharge is the largest value charge meta holds; a larger
	// value is stored whole but never rewritten in place.
	maxValueCharge = (1<<(32-entryFlagBits) - 1) * 8
)

// newEntry returns an entry of the key (h, check) holding val until exp,
// whose value is charged vc bytes. len(val) is at most maxValueLen.
func newEntry(h uint64, check uint32, val []byte, exp int64, vc int64) *entry {
	e := &entry{hash: h, check: check}
	e.data.Store(unsafe.SliceData(val))
	e.n.Store(uint32(len(val)))
	e.exp.Store(exp)
	e.meta.Store(uint32(min(vc, maxValueCharge)/8) << entryFlagBits)
	return e
}

// load returns the entry's value and its expiry, as one rewrite stored
// them. It takes no lock and does not allocate, and leaves retrying to
// loadSlow. Get repeats these lines itself: the compiler does not inline
// load.
func (e *entry) load() ([]byte, int64) {
	s := e.seq.Load()
	data, n, exp := e.data.Load(), e.n.Load(), e.exp.Load()
	if s&1 != 0 || e.seq.Load() != s {
		return e.loadSlow()
	}
	return unsafe.Slice(data, n), exp
}

// loadSlow is load while a rewrite is storing (three word stores, under
// the key's write lock): it retries until it reads a whole value.
func (e *entry) loadSlow() ([]byte, int64) {
	for {
		runtime.Gosched() // the rewriter holds a lock; let it finish
		s := e.seq.Load()
		data, n, exp := e.data.Load(), e.n.Load(), e.exp.Load()
		if s&1 == 0 && e.seq.Load() == s {
			return unsafe.Slice(data, n), exp
		}
	}
}

// store replaces the entry's value and expiry. The caller holds the key's
// stripe lock, so stores of one entry never overlap.
func (e *entry) store(val []byte, exp int64) {
	e.seq.Add(1)
	e.data.Store(unsafe.SliceData(val))
	e.n.Store(uint32(len(val)))
	e.exp.Store(exp)
	e.seq.Add(1)
}

// valueCharge is the charge of the entry's first value, in bytes.
func (e *entry) valueCharge() int64 {
	return int64(e.meta.Load()>>entryFlagBits) * 8
}

func (e *entry) has(flag uint32) bool { return e.meta.Load()&flag != 0 }

// phase offsets the entry's report windows (see touchHit): high bits of
// its hash, so a key keeps its phase across writes.
func (e *entry) phase() int64 {
	return int64(e.hash >> (64 - touchWindowShift))
}
