package stripe

import (
	"sync"
	"testing"
)

func TestCounterConcurrentAddsAreExact(t *testing.T) {
	var c Counter
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 10000; i++ {
				c.Add(1)
			}
		})
	}
	wg.Wait()
	if got := c.Load(); got != 80000 {
		t.Fatalf("Load = %d, want 80000", got)
	}
	c.Add(5)
	if got := c.Load(); got != 80005 {
		t.Fatalf("Load = %d after Add(5), want 80005", got)
	}
}

func TestIndexInRangeAndSpreadAcrossGoroutines(t *testing.T) {
	const goroutines = 64
	idx := make(chan int, goroutines)
	var wg, drawn sync.WaitGroup
	release := make(chan struct{})
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		drawn.Add(1)
		go func() {
			defer wg.Done()
			a, b := Index(16), Index(16)
			if a != b {
				t.Errorf("Index not stable within a goroutine: %d then %d", a, b)
			}
			idx <- a
			drawn.Done()
			<-release // stay alive so no two goroutines share a stack
		}()
	}
	drawn.Wait()
	close(release)
	wg.Wait()
	close(idx)
	seen := map[int]bool{}
	for x := range idx {
		if x < 0 || x >= 16 {
			t.Fatalf("Index(16) = %d", x)
		}
		seen[x] = true
	}
	// A constant or near-constant index would put every goroutine on one
	// or two cells; live goroutines have distinct stacks and spread.
	if len(seen) < 6 {
		t.Fatalf("%d goroutines landed on only %d of 16 cells", goroutines, len(seen))
	}
}

// TestTickCountsOnItsCell: Tick counts like Add(1) and returns its cell's
// count, not the total, so one goroutine's Ticks return 1, 2, 3, ... (one
// goroutine keeps one stack, hence one cell) whatever the other cells hold.
func TestTickCountsOnItsCell(t *testing.T) {
	var c Counter
	c.c[(Index(cells)+1)%cells].n.Add(1000) // another goroutine's cell
	for i := uint64(1); i <= 100; i++ {
		if got := c.Tick(); got != i {
			t.Fatalf("Tick %d returned %d, want %d", i, got, i)
		}
	}
	if got := c.Load(); got != 1100 {
		t.Fatalf("Load = %d after 1000 on another cell and 100 Ticks, want 1100", got)
	}
}

func TestAddAllocatesNothing(t *testing.T) {
	var c Counter
	if n := testing.AllocsPerRun(100, func() { c.Add(1) }); n != 0 {
		t.Fatalf("Add allocated %.0f times", n)
	}
}

func BenchmarkCounterAddParallel(b *testing.B) {
	var c Counter
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			c.Add(1)
		}
	})
}
