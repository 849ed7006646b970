package bench

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// The Redis rows time a few thousand round trips each, so a one-time cost
// inside their loop shows in ns/op. The largest is the heap's growth: a
// client with a 64 MiB L1 adds about 9 MB of live heap (its admission
// sketch), which raises the GC's heap goal, and the loop's first
// allocations then land on pages the process has never touched. On the
// development VM a first-touch page fault costs about 11 µs (50 times a
// bare-metal one): the Set row's loop took 0.24-0.68 faults per op in
// 200 ms, 3-7 µs per Set, against 0.01-0.1 for raw SET. Every Redis row
// therefore starts from a settled heap and a warm connection, and reports
// the minor page faults its timed loop still took (faults/op) so a reader
// can see that the loop measured steady state.

const (
	// warmOps and warmFor bound the untimed ops a Redis row runs after
	// settling: whichever comes first.
	warmOps = 200
	warmFor = 50 * time.Millisecond
	// churnGoals is how many heap goals of garbage settleHeap allocates:
	// enough for the GC to complete a few cycles at the new goal.
	churnGoals = 3
	// churnSize is the size of each garbage object, about that of the
	// sealed values the rows allocate.
	churnSize = 1 << 10
)

// churn keeps settleHeap's garbage on the heap (a local the compiler
// could place on the stack).
var churn []byte

// steady prepares a Redis row's timed loop: it settles the heap and runs
// op untimed (warmOps times or for warmFor), so the connection is open and
// Redis holds the row's key.
func steady(b *testing.B, op func() error) {
	settleHeap()
	for start, n := time.Now(), 0; n < warmOps && (n == 0 || time.Since(start) < warmFor); n++ {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
}

// settleHeap collects, then allocates and drops churnGoals heap goals of
// small garbage, so that the heap has grown to the goal it will run at and
// the pages the timed loop allocates into are mapped already.
func settleHeap() {
	runtime.GC()
	goal := heapGoal()
	for n := uint64(0); n < churnGoals*goal; n += churnSize {
		churn = make([]byte, churnSize)
	}
	churn = nil
}

// heapGoal is the GC's current heap goal in bytes.
func heapGoal() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 4 << 20 // the runtime's minimum goal
	}
	return s[0].Value.Uint64()
}

// reportFaults reports the minor page faults since start (a minorFaults
// reading) per op, where the platform counts them.
func reportFaults(b *testing.B, start int64) {
	if start < 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(minorFaults()-start)/float64(b.N), "faults/op")
}

// runRedis is run for a serial Redis row without per-goroutine state (the
// floor's and the peer's).
func runRedis(b *testing.B, op func() error) {
	run(b, how{redis: true}, func() struct{} { return struct{}{} }, func(*struct{}) error { return op() })
}
