package l1

import (
	"sort"
	"unsafe"
)

// cacheStructBytes is the Cache itself: its lock, stripe and index segment
// arrays.
const cacheStructBytes = int64(unsafe.Sizeof(Cache{}))

// EntryOverhead is what one entry costs in memory besides its value, in
// bytes: the entry (48 bytes, one allocation) and its slots in ristretto's
// store map (56-byte slots) and in its policy's cost map (16-byte slots),
// at the average fill of Go's maps. Measured on Go 1.26 (amd64) by
// TestAllocEntryOverheadMeasured: 156 to 221 bytes as those maps double,
// 185 on average. The read index is sized from MaxBytes and counted in
// FixedBytes, and no copy of the key is kept. Every entry is charged
// EntryOverhead plus its value's bytes (see Config.MaxBytes) against
// Config.MaxBytes.
const EntryOverhead = 185

// Go's malloc size classes up to 32 KiB (internal/runtime/gc), pinned by
// TestAllocSizeMatchesRuntime. Larger objects take whole 8 KiB pages.
var sizeClasses = [...]int64{0, 8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208,
	224, 240, 256, 288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280,
	1408, 1536, 1792, 2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912,
	8192, 9472, 9728, 10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576,
	27264, 28672, 32768}

const (
	maxSmallSize = 32768
	pageSize     = 8192
)

// allocSize is the memory Go's allocator takes for an object of n bytes:
// n rounded up to its size class, or to whole pages above 32 KiB.
func allocSize(n int) int64 {
	if n <= 0 {
		return 0
	}
	if n > maxSmallSize {
		return (int64(n) + pageSize - 1) &^ (pageSize - 1)
	}
	i := sort.Search(len(sizeClasses), func(i int) bool { return sizeClasses[i] >= int64(n) })
	return sizeClasses[i]
}

// FixedBytes is the memory a Cache of maxBytes takes besides its entries,
// in bytes, as New allocates it: ristretto's admission sketch and doorkeeper
// (sized from the default NumCounters), its write buffer, and the read
// index's tables (sized for maxBytes / EntryOverhead entries at three
// quarters load; above caps of about 4.5 GB the tables start at 512 MiB and grow,
// uncharged, with the entries). A full Cache's live bytes are MaxBytes +
// FixedBytes(MaxBytes) plus the value arena's dead records; see the
// package's Limits for the heap in use. With Config.NumCounters set, see
// Cache.FixedBytes.
func FixedBytes(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return 0
	}
	return fixedBytes(maxBytes, defaultNumCounters(maxBytes))
}

// FixedBytes is FixedBytes(MaxBytes) for this cache's own NumCounters.
func (c *Cache) FixedBytes() int64 {
	return fixedBytes(c.cfg.maxBytes, c.cfg.numCounters)
}

// fixedBytes adds up ristretto's fixed structures (see its NewCache,
// newCmSketch and z.NewBloomFilter) and the index and lock arrays.
func fixedBytes(maxBytes, numCounters int64) int64 {
	nc := int64(1)
	for nc < numCounters {
		nc <<= 1
	}
	sketch := 4 * (nc / 2) // four rows of 4-bit counters
	bloomBits := int64(512)
	for float64(bloomBits) < float64(numCounters)*9.585 { // 1% false positives
		bloomBits <<= 1
	}
	const setBuf = 32 * 1024 * 8 // ristretto's write buffer of pointers
	return sketch + bloomBits/8 + setBuf + indexBytes(maxBytes) + cacheStructBytes
}
