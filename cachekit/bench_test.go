package cachekit

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

var benchSizes = []struct {
	name string
	n    int
}{{"100B", 100}, {"1KiB", 1024}}

func benchModes() []struct {
	name string
	opts Options
} {
	return []struct {
		name string
		opts Options
	}{
		{"encrypted", Options{L1MaxBytes: 64 << 20, Encryption: encConfig("")}},
		{"plain", Options{L1MaxBytes: 64 << 20}},
	}
}

// benchKinds runs fn as one sub-benchmark per mode, value kind ("bytes",
// "struct") and size, with a new Client of the mode.
func benchKinds(b *testing.B, fn func(b *testing.B, c *Client, kind string, n int)) {
	for _, m := range benchModes() {
		for _, kind := range []string{"bytes", "struct"} {
			for _, sz := range benchSizes {
				b.Run(m.name+"/"+kind+"/"+sz.name, func(b *testing.B) { fn(b, newClient(b, m.opts), kind, sz.n) })
			}
		}
	}
}

func BenchmarkGetL1Hit(b *testing.B) {
	benchKinds(b, func(b *testing.B, c *Client, kind string, n int) {
		if kind == "bytes" {
			if err := c.SetWithTTL(bg, "k", fixture.NewBytes(n), time.Hour); err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, n)
			b.SetBytes(int64(n))
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = c.AppendValue(bg, dst[:0], "k"); err != nil {
					b.Fatal(err)
				}
			}
			return
		}
		if err := c.SetWithTTL(bg, "k", fixture.NewRecord(n), time.Hour); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(n))
		b.ReportAllocs()
		var v fixture.Record
		for b.Loop() {
			if err := c.Get(bg, "k", &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkSetL1Only(b *testing.B) {
	benchKinds(b, func(b *testing.B, c *Client, kind string, n int) {
		var v any = fixture.NewBytes(n)
		if kind == "struct" {
			v = fixture.NewRecord(n)
		}
		b.SetBytes(int64(n))
		benchSets(b, c, v)
	})
}

// The hot-path budget: an encrypted L1 hit of a []byte value appended into
// a dst with room allocates nothing.
func TestAllocsEncryptedAppendValueL1Hit(t *testing.T) {
	// Not parallel: counts allocations, which other tests running at once would add to.
	assertL1HitAllocatesNothing(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
}

// assertL1HitAllocatesNothing stores a 100 B []byte through a client built
// from opts and fails unless AppendValue's L1 hit into a sized dst returns
// it with zero allocations. Budgets are asserted without -race, where
// sync.Pool keeps its items (make test runs them in a second pass).
func assertL1HitAllocatesNothing(t *testing.T, opts Options) *Client {
	t.Helper()
	return assertL1HitAllocatesNothingCtx(t, bg, opts)
}

// assertL1HitAllocatesNothingCtx is assertL1HitAllocatesNothing with the
// reads called with ctx.
func assertL1HitAllocatesNothingCtx(t *testing.T, ctx context.Context, opts Options) *Client {
	t.Helper()
	if testenv.RaceEnabled {
		t.Skip("allocation budgets are asserted without -race (make test runs them in a second pass)")
	}
	c := newClient(t, opts)
	val := fixture.NewBytes(100)
	mustSetTTL(t, c, "k", val, time.Hour)
	dst := make([]byte, 0, 128)
	out, err := c.AppendValue(ctx, dst[:0], "k") // a first read creates metric series
	if err != nil || !bytes.Equal(out, val) {
		t.Fatalf("AppendValue: %v", err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		out, err = c.AppendValue(ctx, dst[:0], "k")
	})
	if err != nil || !bytes.Equal(out, val) {
		t.Fatalf("AppendValue: %v", err)
	}
	if allocs != 0 {
		t.Fatalf("encrypted L1 hit allocated %.1f times per call, budget 0", allocs)
	}
	return c
}

// BenchmarkL1OnlySet pairs a Set of a key never written before with an
// overwrite of one of 1,024 keys, on an L1-only Client (the embedded
// default), a 32-byte value under a 25-byte key, plain and encrypted. Both
// rows build their key the same way, so the difference is the L1's: a new
// key goes through ristretto's admission queue without waiting for it.
// Run it with -count 5; the rows of one count run back to back.
func BenchmarkL1OnlySet(b *testing.B) {
	for _, m := range benchModes() {
		for _, row := range []struct {
			name string
			mask int
		}{{"new", -1}, {"overwrite", 1023}} {
			b.Run(m.name+"/"+row.name, func(b *testing.B) {
				c := newClient(b, m.opts)
				var v any = value32
				for i := range 1024 {
					mustSetTTL(b, c, sessionKey(i), v, time.Hour)
				}
				b.ReportAllocs()
				i := 1 << 20 // new keys start past the overwritten ones
				for b.Loop() {
					i++
					if err := c.SetWithTTL(bg, sessionKey(i&row.mask), v, time.Hour); err != nil {
						b.Fatal(err)
					}
				}
				// A Set that ristretto's full write buffer dropped would
				// measure a shortcut: report them (0 expected).
				b.ReportMetric(float64(c.l1.Stats().Dropped)/float64(b.N), "dropped/op")
			})
		}
	}
}

// BenchmarkSetAnnounce pairs a Set against a real Redis with its
// announcement (the default: SET and PUBLISH pipelined in one round trip)
// and without (Invalidation.NoAnnounce), tracking on in both. Run it with
// -count so the two rows alternate, and compare them with benchstat.
func BenchmarkSetAnnounce(b *testing.B) {
	srv := redistest.Start(b)
	for _, name := range []string{"announce", "noannounce"} {
		b.Run(name, func(b *testing.B) {
			c := newClient(b, Options{RedisURL: srv.URL(), L1MaxBytes: 64 << 20,
				Invalidation: &Invalidation{NoAnnounce: name == "noannounce"}})
			v := fixture.NewBytes(100)
			benchSets(b, c, v)
		})
	}
}

// benchSets Sets v under one of 1,024 keys per iteration, reporting
// allocations.
func benchSets(b *testing.B, c *Client, v any) {
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if err := c.SetWithTTL(bg, "k"+fmt.Sprint(i&1023), v, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
}
