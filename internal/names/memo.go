package names

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"
)

// memo is a bounded, lossy, direct-mapped cache from keys to local names:
// a hit is one maphash, one atomic load and one string comparison, and
// allocates nothing. A key is memoized at its second miss in a row at its
// slot: a stream of keys each named once (new keys written once) leaves
// the memo as it was and allocates nothing for it.
//
// A slot points at one pointer-free allocation, immutable once stored:
// the key's length (4 bytes), the local name's (1 byte), the local name,
// then the key. One object per memoized key, rather than a pair and its
// two strings, holds the memo's share of the heap down: a memo miss on
// every call (a stream of new keys) replaces one slot per call, and each
// survivor pins the span it was allocated in.
type memo struct {
	seed  maphash.Seed
	mask  uint64
	slots []atomic.Pointer[byte]
	// seen holds, per slot, the hash of the key that last missed there.
	seen []atomic.Uint64
}

// memoHeader is the lengths before a memoized name.
const memoHeader = 5

// init sizes m to at least n slots, a power of two, at least 64.
func (m *memo) init(n int) {
	n = max(n, 64)
	size := 1 << bits.Len(uint(n-1))
	m.seed = maphash.MakeSeed()
	m.mask = uint64(size - 1)
	m.slots = make([]atomic.Pointer[byte], size)
	m.seen = make([]atomic.Uint64, size)
}

func (m *memo) slot(key string) *atomic.Pointer[byte] {
	return &m.slots[maphash.String(m.seed, key)&m.mask]
}

func (m *memo) get(key string) (string, bool) {
	p := m.slot(key).Load()
	if p == nil {
		return "", false
	}
	h := unsafe.Slice(p, memoHeader)
	klen, llen := int(binary.LittleEndian.Uint32(h)), int(h[4])
	if klen != len(key) {
		return "", false
	}
	b := unsafe.Slice(p, memoHeader+llen+klen)
	if string(b[memoHeader+llen:]) != key {
		return "", false
	}
	return unsafe.String(&b[memoHeader], llen), true
}

// put memoizes local as key's name, if key is the last key that missed
// at its slot; else it remembers key as that one. Names are at most
// TaggedLen bytes; an empty key or one of 4 GiB or more is not memoized.
func (m *memo) put(key, local string) {
	if key == "" || len(local) == 0 || len(local) > math.MaxUint8 || uint64(len(key)) > math.MaxUint32 {
		return
	}
	h := maphash.String(m.seed, key)
	if m.seen[h&m.mask].Swap(h) != h {
		return
	}
	b := make([]byte, memoHeader+len(local)+len(key))
	binary.LittleEndian.PutUint32(b, uint32(len(key)))
	b[4] = byte(len(local))
	copy(b[memoHeader:], local)
	copy(b[memoHeader+len(local):], key)
	m.slots[h&m.mask].Store(&b[0])
}
