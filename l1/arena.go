package l1

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"unsafe"
)

// The value arena. Small values are not separate heap objects: put copies
// each into the current chunk of a log of large byte chunks, behind a
// 10-byte record header (the key's hash and the value's length), and the
// entry points into the chunk. Chunks are never written again once a
// record is in them, so a Get may read a value while anything else runs.
//
// Why: with one allocation per value, a cache that evicts on every Set
// leaves the survivors of each GC cycle spread over spans whose other
// slots held that cycle's victims, and Go does not move objects; HeapInuse
// then exceeded the live bytes by the values evicted in one cycle (4 to 5
// MiB at a 16 MiB cap). In the log the dead records of a chunk cost only
// until the chunk is cleaned.
//
// Cleaning: the index counts the record bytes of the values it serves
// (arena.live). When the log fills a chunk while its chunks hold more
// than 9/8 of that plus two chunks, a cleaning is due, and the next write
// runs it after releasing its locks: while the chunks are over that mark,
// up to maxCleanings times, the oldest chunk is taken off the log, its
// live records (those an indexed entry still points at) are copied to the
// head under their key's write lock, and the chunk is left to the
// collector, which frees it once no reader holds a value in it. A chunk
// whose records are more than 8/9 live goes back to the head of the log
// uncopied, so a write copies at most 64/9 (about 7.1) chunks' worth of
// records; over the mark, the chunks are on average less than 8/9 live,
// so some chunk is always worth cleaning (a lower cut-off could leave
// every chunk just above it, and each cleaning would free nothing). One
// write cleans at a time; the others go on, unless the chunks are 5/4
// over that mark, when they wait their turn to clean (measured with 80-byte
// records in 64 KiB chunks: a single writer of new keys keeps the chunks
// within 1.18 × the live records, two writers on two cores flat out within
// 1.25 ×; a mark of 5/4 left 1.30 × and 1.38 ×).
type arena struct {
	mu sync.Mutex
	// cur is the chunk records are appended to (len is its fill).
	cur []byte
	// full holds the filled chunks, oldest first.
	full [][]byte
	// size is a chunk's capacity; maxValue the longest value kept here.
	size, maxValue int
	// total is the bytes of every chunk on the log, cur included.
	total atomic.Int64
	// live is the record bytes of the values the index serves.
	live atomic.Int64
	// due is set when the log fills a chunk while over (see arena).
	due atomic.Bool
	// cleaning is held by the write that cleans: one at a time.
	cleaning sync.Mutex
}

// recHeader is a record's header: the key's hash (8 bytes) and the value's
// length (2 bytes).
const recHeader = 10

// Chunk sizes: a 256th of MaxBytes, within [minChunk, maxChunk]. Values of
// up to an eighth of a chunk go into the arena.
const (
	minChunk = 4 << 10
	maxChunk = 64 << 10
)

// init sizes the arena for a cache of maxBytes.
func (a *arena) init(maxBytes int64) {
	a.size = int(min(max(maxBytes/256, minChunk), maxChunk))
	a.maxValue = a.size / 8
}

// recBytes is the arena bytes a value of n bytes takes: 0 for a value kept
// as its own allocation (empty, or longer than maxValue).
func (a *arena) recBytes(n int) int64 {
	if n == 0 || n > a.maxValue {
		return 0
	}
	return int64(recHeader + n)
}

// put copies val, the value of the key hashed to h, into the arena and
// returns the copy (its capacity is its length). It returns val itself for
// a value kept as its own allocation.
func (a *arena) put(h uint64, val []byte) []byte {
	if a.recBytes(len(val)) == 0 {
		return val
	}
	n := recHeader + len(val)
	a.mu.Lock()
	if len(a.cur)+n > cap(a.cur) {
		if a.cur != nil {
			a.full = append(a.full, a.cur)
			if a.over() {
				a.due.Store(true)
			}
		}
		a.cur = make([]byte, 0, a.size)
		a.total.Add(int64(a.size))
	}
	off := len(a.cur)
	a.cur = a.cur[:off+n]
	rec := a.cur[off : off+n : off+n]
	binary.LittleEndian.PutUint64(rec, h)
	binary.LittleEndian.PutUint16(rec[8:], uint16(len(val)))
	copy(rec[recHeader:], val)
	a.mu.Unlock()
	return rec[recHeader:]
}

// over reports whether the chunks hold more than 9/8 of the live records
// plus two chunks; far, whether they hold more than 5/4 of that.
func (a *arena) over() bool { return a.total.Load() > a.mark() }
func (a *arena) far() bool  { m := a.mark(); return a.total.Load() > m+m/4 }

func (a *arena) mark() int64 {
	live := a.live.Load()
	return live + live/8 + int64(2*a.size)
}

// oldest takes the oldest filled chunk off the log, or returns nil.
func (a *arena) oldest() []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.full) == 0 {
		return nil
	}
	ch := a.full[0]
	a.full[0] = nil
	a.full = a.full[1:]
	a.total.Add(-int64(cap(ch)))
	return ch
}

// requeue puts a chunk taken by oldest back, as the newest filled one.
func (a *arena) requeue(ch []byte) {
	a.mu.Lock()
	a.full = append(a.full, ch)
	a.total.Add(int64(cap(ch)))
	a.mu.Unlock()
}

// reset forgets every chunk (Clear and Close, with every write excluded
// and the index emptied). Values still being read stay valid: the
// collector frees a chunk only when nothing points into it.
func (a *arena) reset() {
	a.mu.Lock()
	a.cur, a.full = nil, nil
	a.total.Store(0)
	a.live.Store(0)
	a.due.Store(false)
	a.mu.Unlock()
}

// records calls fn for each record of the chunk ch, with its key's hash
// and its value.
func records(ch []byte, fn func(h uint64, val []byte)) {
	for off := 0; off+recHeader <= len(ch); {
		h := binary.LittleEndian.Uint64(ch[off:])
		n := int(binary.LittleEndian.Uint16(ch[off+8:]))
		start := off + recHeader
		fn(h, ch[start:start+n:start+n])
		off = start + n
	}
}

// maxCleanings bounds the chunks one write cleans.
const maxCleanings = 8

// clean runs a cleaning that is due (see arena), unless another write is
// cleaning; when the chunks are far over their mark, it waits for that
// write and cleans after it, so that writers outpacing one cleaner wait
// for it. The caller holds no lock of the cache.
func (c *Cache) clean() {
	a := &c.arena
	if a.far() {
		a.cleaning.Lock()
	} else if !a.cleaning.TryLock() {
		return
	}
	defer a.cleaning.Unlock()
	a.due.Store(false)
	for range maxCleanings {
		if !a.over() {
			break
		}
		ch := a.oldest()
		if ch == nil {
			break
		}
		c.cleanChunk(ch)
	}
}

// cleanChunk copies the live records of ch, taken off the log, to its head,
// or puts ch back when more than 8/9 of it is live.
func (c *Cache) cleanChunk(ch []byte) {
	live := 0
	records(ch, func(h uint64, val []byte) {
		if c.idx.holding(h, unsafe.SliceData(val), len(val)) != nil {
			live += recHeader + len(val)
		}
	})
	if 9*live > 8*cap(ch) {
		c.arena.requeue(ch)
		return
	}
	// Every record again, under its key's locks: the count above took
	// none, and an entry a write re-publishes may have been missed.
	records(ch, c.relocate)
}

// relocate copies val, a record of the key hashed to h in a chunk being
// cleaned, to the arena's head, if the key's entry still holds it. It
// takes the key's locks, so no write of the key interleaves.
func (c *Cache) relocate(h uint64, val []byte) {
	c.keyLocked(h, func(*stripe) bool {
		e := c.idx.holding(h, unsafe.SliceData(val), len(val))
		if e == nil {
			return false
		}
		_, exp := e.load()
		e.store(c.arena.put(h, val), exp)
		return true
	})
}
