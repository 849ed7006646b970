package l1

import (
	"slices"
	"testing"
)

// allocSize agrees with Go's allocator: a slice grown from nil to n bytes
// gets the capacity of its allocation (growslice rounds up to the size
// class, or to whole pages above 32 KiB).
func TestAllocSizeMatchesRuntime(t *testing.T) {
	check := func(n int) {
		if got, want := allocSize(n), int64(cap(slices.Grow([]byte(nil), n))); got != want {
			t.Fatalf("allocSize(%d) = %d, Go allocates %d", n, got, want)
		}
	}
	for n := 1; n <= 4096; n++ {
		check(n)
	}
	for _, c := range sizeClasses[1:] {
		check(int(c) - 1)
		check(int(c))
		check(int(c) + 1)
	}
	for _, n := range []int{40_000, 65_536, 65_537, 1 << 20, 1<<20 + 1} {
		check(n)
	}
	if allocSize(0) != 0 || allocSize(-1) != 0 {
		t.Fatal("allocSize of nothing is not 0")
	}
}
