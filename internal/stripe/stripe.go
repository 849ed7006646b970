package stripe

import (
	"sync/atomic"
	"unsafe"
)

// cells is the number of padded cells per Counter (a power of two).
const cells = 16

// cell holds one share of the count on a cache line of its own.
type cell struct {
	n atomic.Uint64
	_ [56]byte
}

// Counter is a uint64 counter safe for concurrent use. The zero value is
// zero. Add is wait-free; Load sums the cells, so it is exact once writers
// are quiet and never runs backwards under concurrent Adds.
type Counter struct {
	c [cells]cell
}

// Add adds n to the counter.
func (c *Counter) Add(n uint64) {
	c.c[Index(cells)].n.Add(n)
}

// Tick adds one and returns the new count of the cell it added to (not the
// total): a caller acts on one in every k of its adds, without a second
// shared count, by testing that value modulo k. A cell's first Tick
// returns 1.
func (c *Counter) Tick() uint64 {
	return c.c[Index(cells)].n.Add(1)
}

// Load returns the current total.
func (c *Counter) Load() uint64 {
	var sum uint64
	for i := range c.c {
		sum += c.c[i].n.Load()
	}
	return sum
}

// Index returns an index in [0, n) for callers that stripe their own
// structures (n must be a power of two). It is derived from the address of
// the calling goroutine's stack: stable for a goroutine, different for
// goroutines whose stacks are apart, and a handful of instructions (a
// random draw costs about ninety). Distinct goroutines can still share an
// index; that only costs contention, never correctness.
//
//go:nosplit
func Index(n int) int {
	var probe byte
	p := uintptr(unsafe.Pointer(&probe))
	// Goroutine stacks are at least 2 KiB and 2 KiB-aligned, and adjacent
	// goroutines often have adjacent stacks: drop the offset within 2 KiB
	// and spread the rest with a multiplicative (Fibonacci) hash, whose
	// middle bits depend on every input bit. (Taking bits 13 and up without
	// mixing put 64 live goroutines on as few as 5 of 16 cells.)
	h := uint64(p>>11) * 0x9E3779B97F4A7C15
	return int(h>>32) & (n - 1)
}
