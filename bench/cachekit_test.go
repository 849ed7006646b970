package bench

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// BenchmarkCachekit measures our client. Row names are stable: benchstat
// compares them across commits, and cmd/benchratio divides them by the
// BenchmarkFloor and BenchmarkPeer rows of the same run.
func BenchmarkCachekit(b *testing.B) {
	for _, enc := range []bool{true, false} {
		for _, sz := range fixture.Sizes {
			b.Run("L1Hit/"+modeName(enc)+"/bytes/"+sz.Name, func(b *testing.B) { benchL1HitBytes(b, enc, sz.N, false) })
			b.Run("L1Hit/"+modeName(enc)+"/struct/"+sz.Name, func(b *testing.B) { benchL1HitStruct(b, enc, sz.N, false) })
		}
	}
	b.Run("L2Get/encrypted/bytes/1KiB", func(b *testing.B) { benchL2Get(b, 1024, false) })
	b.Run("Set/encrypted/bytes/1KiB", func(b *testing.B) { benchSet(b, 1024, true) })
	b.Run("SetL2Only/encrypted/bytes/1KiB", func(b *testing.B) { benchSet(b, 1024, false) })
	b.Run("MGet100/encrypted/bytes/100B", func(b *testing.B) { benchMany(b, 100, true) })
	b.Run("GetSeq100/encrypted/bytes/100B", func(b *testing.B) { benchMany(b, 100, false) })
	b.Run("L1Hit/encrypted/profile/1KiB", func(b *testing.B) { benchL1HitProfile(b, 1024) })
	b.Run("L1Hit/encrypted/profile/256B", func(b *testing.B) { benchL1HitProfile(b, 256) })
	b.Run("L1Hit/encrypted/member/1KiB", func(b *testing.B) { benchL1HitMember(b, 1024) })
	b.Run("L1Hit/encrypted/member/256B", func(b *testing.B) { benchL1HitMember(b, 256) })
	b.Run("GetOrLoadHit/encrypted/struct/100B", benchGetOrLoadHit)
	b.Run("L1HitParallel/encrypted/bytes/100B", func(b *testing.B) { benchL1HitBytes(b, true, 100, true) })
	b.Run("L1HitParallel/encrypted/struct/100B", func(b *testing.B) { benchL1HitStruct(b, true, 100, true) })
	b.Run("L1HitParallelDistinct/encrypted/bytes/100B", func(b *testing.B) { benchL1HitDistinct(b, false) })
	b.Run("L1HitParallelDistinct/encrypted/struct/100B", func(b *testing.B) { benchL1HitDistinct(b, true) })
	b.Run("L2GetParallel/encrypted/bytes/1KiB", func(b *testing.B) { benchL2Get(b, 1024, true) })
}

// how says how run drives a row: serially with b.Loop or spread over
// GOMAXPROCS goroutines with b.RunParallel, and whether the row goes
// through Redis (then it starts from steady state, see steady, and reports
// faults/op).
type how struct{ parallel, redis bool }

// run drives op for b.N iterations as h says. newState gives each
// goroutine its own scratch (a dst buffer, a struct).
func run[S any](b *testing.B, h how, newState func() S, op func(*S) error) {
	if h.redis {
		s := newState()
		steady(b, func() error { return op(&s) })
		defer reportFaults(b, minorFaults()) // counted from here, the timed loop
	}
	b.ReportAllocs()
	if !h.parallel {
		s := newState()
		for b.Loop() {
			if err := op(&s); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	b.ResetTimer() // b.Loop does so for serial rows; the Client's construction is not the row's
	b.RunParallel(func(pb *testing.PB) {
		s := newState()
		for pb.Next() {
			if err := op(&s); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchReadBytes stores n bytes through a client of cfg and reads them
// back with AppendValue into a sized dst: an L1 hit when cfg has L1, a
// Redis read when it has only Redis.
func benchReadBytes(b *testing.B, cfg clientConfig, n int, parallel bool) {
	c := newClient(b, cfg)
	key := benchKey(b, "read")
	if err := c.SetWithTTL(bg, key, fixture.NewBytes(n), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	run(b, how{parallel: parallel, redis: cfg.redis}, func() []byte { return make([]byte, 0, n) }, func(dst *[]byte) error {
		var err error
		*dst, err = c.AppendValue(bg, (*dst)[:0], key)
		return err
	})
}

func benchL1HitBytes(b *testing.B, encrypted bool, n int, parallel bool) {
	benchReadBytes(b, clientConfig{encrypted: encrypted, l1: true}, n, parallel)
}

func benchL1HitStruct(b *testing.B, encrypted bool, n int, parallel bool) {
	c := newClient(b, clientConfig{encrypted: encrypted, l1: true})
	key := benchKey(b, "l1s")
	if err := c.SetWithTTL(bg, key, fixture.NewRecord(n), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	run(b, how{parallel: parallel}, func() fixture.Record { return fixture.Record{} }, func(r *fixture.Record) error {
		return c.Get(bg, key, r)
	})
}

// benchL1HitDistinct is L1HitParallel with a key per goroutine: each
// RunParallel goroutine reads its own entry (100 B of bytes, or a 100 B
// Record), so the goroutines share the Client and nothing else.
func benchL1HitDistinct(b *testing.B, record bool) {
	c := newClient(b, clientConfig{encrypted: true, l1: true})
	const n = 100
	keys := make([]string, 64) // more than any GOMAXPROCS here
	for i := range keys {
		keys[i] = benchKey(b, "l1d")
		var v any = fixture.NewBytes(n)
		if record {
			v = fixture.NewRecord(n)
		}
		if err := c.SetWithTTL(bg, keys[i], v, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int32
	b.SetBytes(n)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := keys[int(next.Add(1)-1)%len(keys)]
		dst, r := make([]byte, 0, n), fixture.Record{}
		for pb.Next() {
			var err error
			if record {
				err = c.Get(bg, key, &r)
			} else {
				dst, err = c.AppendValue(bg, dst[:0], key)
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// benchL1HitProfile is the struct hit for the realistic shape
// (fixture.Profile: times, a pointer, a nested struct, a map, []int64).
func benchL1HitProfile(b *testing.B, n int) {
	c := newClient(b, clientConfig{encrypted: true, l1: true})
	key := benchKey(b, "l1p")
	if err := c.SetWithTTL(bg, key, fixture.NewProfile(n), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	run(b, how{}, func() fixture.Profile { return fixture.Profile{} }, func(p *fixture.Profile) error {
		return c.Get(bg, key, p)
	})
}

// benchL1HitMember is the struct hit for the shape with every field kind
// the fast decoder covers (fixture.Member: an embedded struct of times, a
// bool, pointers to a string and a struct, a nested struct, maps of
// strings and integers, slices of integers and strings).
func benchL1HitMember(b *testing.B, n int) {
	c := newClient(b, clientConfig{encrypted: true, l1: true})
	key := benchKey(b, "l1m")
	if err := c.SetWithTTL(bg, key, fixture.NewMember(n), time.Hour); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(n))
	run(b, how{}, func() fixture.Member { return fixture.Member{} }, func(m *fixture.Member) error {
		return c.Get(bg, key, m)
	})
}

func benchL2Get(b *testing.B, n int, parallel bool) {
	benchReadBytes(b, clientConfig{encrypted: true, redis: true}, n, parallel)
}

// benchSet stores n bytes through Redis, with L1 on (the Set row) or off
// (SetL2Only: the same seal and round trip without the L1 write and
// without a 64 MiB L1 alive in the process).
func benchSet(b *testing.B, n int, withL1 bool) {
	c := newClient(b, clientConfig{encrypted: true, l1: withL1, redis: true})
	key := benchKey(b, "set")
	v := fixture.NewBytes(n)
	b.SetBytes(int64(n))
	run(b, how{redis: true}, func() struct{} { return struct{}{} }, func(*struct{}) error {
		return c.SetWithTTL(bg, key, v, time.Hour)
	})
}

// benchMany reads the same count keys from Redis (L1 off) either with one
// MGet (one round trip) or with one Get each.
func benchMany(b *testing.B, count int, batched bool) {
	c := newClient(b, clientConfig{encrypted: true, redis: true})
	keys := make([]string, count)
	v := fixture.NewBytes(100)
	for i := range keys {
		keys[i] = benchKey(b, "many")
		if err := c.SetWithTTL(bg, keys[i], v, time.Hour); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(count * len(v)))
	if batched {
		run(b, how{redis: true}, func() struct{} { return struct{}{} }, func(*struct{}) error {
			got, err := cachekit.MGet[[]byte](bg, c, keys)
			if err == nil && len(got) != count {
				b.Fatalf("MGet returned %d of %d values", len(got), count)
			}
			return err
		})
		return
	}
	run(b, how{redis: true}, func() []byte { return make([]byte, 0, 100) }, func(dst *[]byte) error {
		for _, k := range keys {
			var err error
			if *dst, err = c.AppendValue(bg, (*dst)[:0], k); err != nil {
				return err
			}
		}
		return nil
	})
}

func benchGetOrLoadHit(b *testing.B) {
	c := newClient(b, clientConfig{encrypted: true, l1: true})
	key := benchKey(b, "gol")
	v := fixture.NewRecord(100)
	if err := c.SetWithTTL(bg, key, v, time.Hour); err != nil {
		b.Fatal(err)
	}
	loader := func(context.Context) (fixture.Record, error) {
		b.Fatal("loader called on a hit")
		return fixture.Record{}, nil
	}
	b.SetBytes(100)
	run(b, how{}, func() struct{} { return struct{}{} }, func(*struct{}) error {
		_, err := cachekit.GetOrLoadTTL(bg, c, key, time.Hour, loader)
		return err
	})
}
