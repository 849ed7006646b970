package testenv

import "runtime"

// HeapAfterGC returns HeapAlloc (the live bytes) and HeapInuse after a
// full collection: what the memory tests of l1 and cachekit measure.
func HeapAfterGC() (alloc, inuse int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc), int64(m.HeapInuse)
}
