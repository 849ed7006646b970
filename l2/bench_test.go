package l2

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const benchSize = 1 << 10

func benchFixture(b *testing.B) *fixture {
	f := setup(b)
	if err := f.store.Set(bg, "bench:key", make([]byte, benchSize), time.Hour); err != nil {
		b.Fatal(err)
	}
	return f
}

// BenchmarkGet measures one GET of a 1 KiB value against the harness
// server, through Store.Get and, for comparison, through go-redis's
// GetToBuffer (reply read into a caller buffer).
func BenchmarkGet(b *testing.B) {
	f := benchFixture(b)
	b.Run("1KiB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			if _, err := f.store.Get(bg, "bench:key"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1KiB-GetToBuffer", func(b *testing.B) {
		buf := make([]byte, benchSize+2)
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			if err := f.rdb.GetToBuffer(bg, "bench:key", buf).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1KiB-WithTTL", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			if _, _, err := f.store.GetWithTTL(bg, "bench:key"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSet(b *testing.B) {
	f := benchFixture(b)
	v := make([]byte, benchSize)
	b.Run("1KiB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(benchSize)
		for b.Loop() {
			if err := f.store.Set(bg, "bench:key", v, time.Hour); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkMGet(b *testing.B) {
	f := benchFixture(b)
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = "bench:m:" + strconv.Itoa(i)
		f.store.Set(bg, keys[i], make([]byte, benchSize), time.Hour)
	}
	b.Run("16x1KiB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(16 * benchSize)
		for b.Loop() {
			if _, err := f.store.MGet(bg, keys); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Allocation budgets for the Redis paths, as regression guards at today's
// measurements (go-redis v9.24.0). A hit costs go-redis's command, argument
// slice, boxed key, connection health check, the reply buffer and, since
// v9.24, a context value per command (captureFixedDialExhaustion) and a
// redis-error check (9; 7 on v9.23). A miss is far dearer (32; 27 on
// v9.23): go-redis classifies redis.Nil against every retryable error type
// with errors.As, allocating each time, before l2 ever sees it.
func TestAllocationBudgets(t *testing.T) {
	f := setup(t)
	v := make([]byte, benchSize)
	if err := f.store.Set(bg, "k", v, time.Hour); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		budget float64
		fn     func()
	}{
		{"Get hit", 9, func() { _, _ = f.store.Get(bg, "k") }},
		{"Get miss", 32, func() { _, _ = f.store.Get(bg, "absent") }},
		{"Set", 11, func() { _ = f.store.Set(bg, "k", v, time.Hour) }},
	}
	// The same through a fenced Store (Store.Fence, on in every Client):
	// watching the connections costs no allocation.
	fenced := New(redis.NewClient(&redis.Options{Addr: f.srv.Addr(), MaxRetries: -1}))
	if err := fenced.Fence(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fenced.Close(); _ = fenced.Client().Close() })
	cases = append(cases,
		struct {
			name   string
			budget float64
			fn     func()
		}{"fenced Get hit", 9, func() { _, _ = fenced.Get(bg, "k") }},
		struct {
			name   string
			budget float64
			fn     func()
		}{"fenced Set", 11, func() { _ = fenced.Set(bg, "k", v, time.Hour) }})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := testing.AllocsPerRun(200, tc.fn)
			t.Logf("%v allocs per call", got)
			if got > tc.budget {
				t.Fatalf("%v allocs per call, budget %v", got, tc.budget)
			}
		})
	}
}
