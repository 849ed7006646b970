package l1

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The read index: an open-addressed hash table from a key's 96-bit
// fingerprint (entry.hash, entry.check) to the entry Get serves for it.
// It replaces a sync.Map of boxed keys: a slot is one pointer, the table is
// sized from MaxBytes when the cache is made (see FixedBytes), and no key
// string is kept at all.
//
// Reads take no lock: Get loads a segment's table and probes it. Writers
// (publish, unpublish, the ristretto callbacks) take the segment's mutex.
// A removed slot becomes a tombstone rather than being refilled by moving
// its neighbours, so a reader never misses an entry that stays put; when
// tombstones and entries fill three quarters of a table, the writer builds
// a fresh table (twice the size if entries alone fill five eighths) and
// publishes it with one atomic store. A reader still probing the old table
// reads it as it was at that instant: writers never touch a table once
// replaced.
const (
	indexSegmentBits = 6
	indexSegments    = 1 << indexSegmentBits
	minSegmentSlots  = 8
	// maxSegmentSlots bounds the table a segment starts with: 8 MiB each,
	// 512 MiB in all, reached at caps of about 4.5 GB; beyond that, tables
	// grow as entries arrive.
	maxSegmentSlots = 1 << 20
)

// tombstone marks a slot whose entry was removed. Probes continue past it.
var tombstone = new(entry)

// index is the read index. The zero value is not usable; see init.
type index struct {
	segs [indexSegments]segment
	// vals is the arena whose live count the index keeps: the record
	// bytes of the values of the entries it holds (see arena).
	vals *arena
}

// segment is one independently locked part of the index, chosen by the top
// bits of the key's hash.
type segment struct {
	mu    sync.Mutex
	tab   atomic.Pointer[table]
	live  int // entries in tab (guarded by mu)
	used  int // entries and tombstones in tab (guarded by mu)
	slots int // the size tab starts at, and returns to on reset
	_     [64 - 8 - 8 - 8 - 8 - 8]byte
}

// table is a power-of-two array of slots, probed linearly.
type table struct {
	mask  uint64
	slots []atomic.Pointer[entry]
}

func newTable(n int) *table {
	return &table{mask: uint64(n - 1), slots: make([]atomic.Pointer[entry], n)}
}

// segmentSlots is the table size each segment starts with for a cache of
// maxBytes: room for every entry the cap can hold at the smallest charge
// (EntryOverhead, an empty value), at a load of at most three quarters.
// (Entries with values are fewer: at 48-byte values, a little over half.)
func segmentSlots(maxBytes int64) int {
	entries := maxBytes/EntryOverhead/indexSegments + 1
	n := uint64(entries + entries/3)
	n = max(n, minSegmentSlots)
	n = min(n, maxSegmentSlots)
	return 1 << bits.Len64(n-1)
}

// indexBytes is the memory of the index's tables as newIndex makes them.
func indexBytes(maxBytes int64) int64 {
	return int64(indexSegments) * (int64(segmentSlots(maxBytes))*int64(unsafe.Sizeof(atomic.Pointer[entry]{})) +
		int64(unsafe.Sizeof(table{})))
}

// init makes x an empty index sized for a cache of maxBytes, counting its
// values' records in vals.
func (x *index) init(maxBytes int64, vals *arena) {
	x.vals = vals
	n := segmentSlots(maxBytes)
	for i := range x.segs {
		x.segs[i].slots = n
		x.segs[i].tab.Store(newTable(n))
	}
}

func (x *index) segment(h uint64) *segment {
	return &x.segs[h>>(64-indexSegmentBits)]
}

// get returns the entry of key (h, check), or nil. It takes no lock.
func (x *index) get(h uint64, check uint32) *entry {
	t := x.segment(h).tab.Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e != tombstone && e.check == check {
			return e
		}
	}
}

// find returns the slot holding (h, check) in t, else the first free slot
// (tombstone or empty) of the probe, with found false. The caller holds the
// segment's mutex, and t has at least one empty slot.
func (t *table) find(h uint64, check uint32) (slot *atomic.Pointer[entry], found bool) {
	var free *atomic.Pointer[entry]
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		s := &t.slots[i]
		e := s.Load()
		switch {
		case e == nil:
			if free == nil {
				free = s
			}
			return free, false
		case e == tombstone:
			if free == nil {
				free = s
			}
		case e.hash == h && e.check == check:
			return s, true
		}
	}
}

// publish makes e the entry of its key and returns the entry it replaced,
// or nil.
func (x *index) publish(e *entry) (prev *entry) {
	sg := x.segment(e.hash)
	sg.mu.Lock()
	defer sg.mu.Unlock()
	t := sg.tab.Load()
	s, found := t.find(e.hash, e.check)
	x.vals.live.Add(x.vals.recBytes(int(e.n.Load())))
	if found {
		prev = s.Load()
		s.Store(e)
		x.vals.live.Add(-x.vals.recBytes(int(prev.n.Load())))
		return prev
	}
	if s.Load() == nil {
		sg.used++
	}
	sg.live++
	s.Store(e)
	if 4*sg.used > 3*len(t.slots) {
		sg.rebuild(t)
	}
	return nil
}

// remove takes the entry of key (h, check) out of the index and returns it,
// or nil when there is none. When e is not nil, it removes only e: a newer
// entry of the key stays.
func (x *index) remove(h uint64, check uint32, e *entry) *entry {
	sg := x.segment(h)
	sg.mu.Lock()
	defer sg.mu.Unlock()
	s, found := sg.tab.Load().find(h, check)
	if !found {
		return nil
	}
	cur := s.Load()
	if e != nil && cur != e {
		return nil
	}
	s.Store(tombstone)
	sg.live--
	x.vals.live.Add(-x.vals.recBytes(int(cur.n.Load())))
	return cur
}

// holding returns the indexed entry of the key hashed to h whose value
// starts at p and is n bytes long (an empty slice of a record, stored by a
// Set, starts there too), or nil. It takes no lock.
func (x *index) holding(h uint64, p *byte, n int) *entry {
	t := x.segment(h).tab.Load()
	for i := h & t.mask; ; i = (i + 1) & t.mask {
		e := t.slots[i].Load()
		if e == nil {
			return nil
		}
		if e.hash == h && e != tombstone && e.data.Load() == p && int(e.n.Load()) == n {
			return e
		}
	}
}

// rewrite stores val, expiring at exp, in e if the index still holds e,
// and reports whether it did. The caller holds the key's stripe lock.
func (x *index) rewrite(e *entry, val []byte, exp int64) bool {
	sg := x.segment(e.hash)
	sg.mu.Lock()
	defer sg.mu.Unlock()
	if s, found := sg.tab.Load().find(e.hash, e.check); !found || s.Load() != e {
		return false
	}
	x.vals.live.Add(x.vals.recBytes(len(val)) - x.vals.recBytes(int(e.n.Load())))
	e.store(val, exp)
	return true
}

// rebuild replaces t, the segment's table, with a fresh one holding its
// live entries, doubled while they fill five eighths of it (so a rebuild
// leaves room for an eighth of the table in tombstones before the next).
// The caller holds mu.
func (sg *segment) rebuild(t *table) {
	n := len(t.slots)
	for 8*sg.live >= 5*n {
		n *= 2
	}
	nt := newTable(n)
	for i := range t.slots {
		if e := t.slots[i].Load(); e != nil && e != tombstone {
			s, _ := nt.find(e.hash, e.check)
			s.Store(e)
		}
	}
	sg.used = sg.live
	sg.tab.Store(nt)
}

// fresh returns empty tables for every segment, made outside any lock,
// for reset.
func (x *index) fresh() [indexSegments]*table {
	var ts [indexSegments]*table
	for i := range ts {
		ts[i] = newTable(x.segs[i].slots)
	}
	return ts
}

// reset empties the index, swapping in the tables from fresh. The caller
// excludes every writer (Clear and Close hold every shard lock; callbacks
// take the segment mutexes, which reset takes one by one).
func (x *index) reset(ts [indexSegments]*table) {
	for i := range x.segs {
		sg := &x.segs[i]
		sg.mu.Lock()
		sg.tab.Store(ts[i])
		sg.live, sg.used = 0, 0
		sg.mu.Unlock()
	}
}

// len returns the number of entries indexed.
func (x *index) len() int {
	n := 0
	for i := range x.segs {
		sg := &x.segs[i]
		sg.mu.Lock()
		n += sg.live
		sg.mu.Unlock()
	}
	return n
}
