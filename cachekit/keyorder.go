package cachekit

// The order of this Client's writes of a key against an interop-mode
// load's store. Interop keys carry no lease (other SDKs share them), so a
// load's store is a SET NX, which a Delete made while the loader ran
// cannot stop: the key is empty again. Within this Client the load knows
// better: every write of a key moves the key's sequence on (under a read
// lock of its stripe, until Redis answered), and the store goes only if
// the sequence is the one read before the load, under the stripe's write
// lock until Redis answered. A write that began before the store is then
// seen by it; one that begins after it is sent after it, and wins.

import (
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// orderStripes is the number of stripes of a keyOrder: keys sharing one
// only make a store give way more often (a write of the other key looks
// like a write of its own).
const orderStripes = 256

// keyOrder orders a Client's writes of each key against a load's store.
type keyOrder struct {
	seed    maphash.Seed
	stripes [orderStripes]struct {
		mu  sync.RWMutex
		seq atomic.Uint64 // moved on with mu read-held; still while mu is held for writing
	}
}

func newKeyOrder() *keyOrder { return &keyOrder{seed: maphash.MakeSeed()} }

func (o *keyOrder) index(key string) int {
	return int(maphash.String(o.seed, key) % orderStripes)
}

// seq returns key's sequence now: what a load reads before it runs.
func (o *keyOrder) seq(key string) uint64 {
	return o.stripes[o.index(key)].seq.Load()
}

// write runs send, a write of keys, after moving their sequences on, with
// their stripes read-locked (in order) until it returns.
func (o *keyOrder) write(keys []string, send func() error) error {
	if len(keys) == 1 { // Set, SetIfAbsent, a one-key Delete: no list of stripes
		s := &o.stripes[o.index(keys[0])]
		s.mu.RLock()
		defer s.mu.RUnlock()
		s.seq.Add(1)
		return send()
	}
	idx := make([]int, 0, len(keys))
	for _, k := range keys {
		idx = append(idx, o.index(k))
	}
	slices.Sort(idx)
	idx = slices.Compact(idx)
	for _, i := range idx {
		s := &o.stripes[i]
		s.mu.RLock()
		s.seq.Add(1)
	}
	defer func() {
		for _, i := range idx {
			o.stripes[i].mu.RUnlock()
		}
	}()
	return send()
}

// store runs send, a load's store of key, only if no write of key began
// since its sequence was seq, holding the stripe for writing until send
// returns; ran is false when a write came first.
func (o *keyOrder) store(key string, seq uint64, send func() error) (ran bool, err error) {
	s := &o.stripes[o.index(key)]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.seq.Load() != seq {
		return false, nil
	}
	return true, send()
}
