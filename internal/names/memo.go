package names

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// memo is a bounded, lossy, direct-mapped cache from keys to local names:
// a hit is one maphash, one atomic load and one string comparison, and
// allocates nothing.
type memo struct {
	seed  maphash.Seed
	mask  uint64
	slots []atomic.Pointer[pair]
}

// pair is one memoized key and its local name; immutable once stored.
type pair struct{ key, local string }

// init sizes m to at least n slots, a power of two, at least 64.
func (m *memo) init(n int) {
	n = max(n, 64)
	size := 1 << bits.Len(uint(n-1))
	m.seed = maphash.MakeSeed()
	m.mask = uint64(size - 1)
	m.slots = make([]atomic.Pointer[pair], size)
}

func (m *memo) slot(key string) *atomic.Pointer[pair] {
	return &m.slots[maphash.String(m.seed, key)&m.mask]
}

func (m *memo) get(key string) (string, bool) {
	if p := m.slot(key).Load(); p != nil && p.key == key {
		return p.local, true
	}
	return "", false
}

func (m *memo) put(key, local string) {
	m.slot(key).Store(&pair{key: key, local: local})
}
