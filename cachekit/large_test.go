package cachekit

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// largeValue is a value of n bytes that does not compress (so every stage
// of the large path sees all of it).
func largeValue(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}

// TestLargePathBoundedPieces: a large Set and Get (L1 hit and Redis read)
// hand no assembly call (memmove, memclr, xxh3, AES-GCM) more than
// chunked.Size bytes, and every stage of the path reports its pieces: the
// bytes reported per operation are counted, not timed.
func TestLargePathBoundedPieces(t *testing.T) {
	// Not parallel: chunked.Observe sees every large operation in the process.
	_, rdb := withRedis(t)
	// A read gets no transfer allowance: raise AttemptTimeout (one attempt,
	// no breaker) so a 4 MiB read under -race on a busy machine is not cut
	// at the default 200 ms; this test counts pieces, not time.
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 64 << 20, Encryption: encConfig(""),
		Reliability: &Reliability{AttemptTimeout: 5 * time.Second, OperationTimeout: 5 * time.Second, MaxAttempts: 1, DisableBreaker: true}})
	const size = 4 << 20
	v := largeValue(size)

	var mu sync.Mutex
	var total, biggest int
	restore := chunked.Observe(func(n int) {
		mu.Lock()
		total += n
		biggest = max(biggest, n)
		mu.Unlock()
	})
	defer restore()
	take := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		t, b := total, biggest
		total, biggest = 0, 0
		return t, b
	}

	mustSet(t, c, "big", v)
	setTotal, setMax := take()
	got, err := c.GetBytes(bg, "big") // L1 hit
	if err != nil || !bytes.Equal(got, v) {
		t.Fatalf("GetBytes (L1) = %d bytes, %v", len(got), err)
	}
	l1Total, l1Max := take()
	c.l1.Delete("big")
	got, err = c.GetBytes(bg, "big") // from Redis
	if err != nil || !bytes.Equal(got, v) {
		t.Fatalf("GetBytes (Redis) = %d bytes, %v", len(got), err)
	}
	l2Total, l2Max := take()
	t.Logf("bytes handed to bounded calls: Set %.1f×, Get (L1) %.1f×, Get (Redis) %.1f× the value",
		float64(setTotal)/size, float64(l1Total)/size, float64(l2Total)/size)
	for name, m := range map[string]int{"Set": setMax, "Get (L1)": l1Max, "Get (Redis)": l2Max} {
		if m > chunked.Size {
			t.Errorf("%s handed one call %d bytes, more than chunked.Size (%d)", name, m, chunked.Size)
		}
	}
	// Set: the msgpack copy, the literal block copy, xxh3, the CTR pass
	// and GHASH pass of AES-GCM (one note per chunk for both), the
	// scratch clear. Get: GHASH, CTR, the literal copy, xxh3, the copy
	// into the caller's slice, the two scratch clears.
	for _, c := range []struct {
		name        string
		total, want int
	}{{"Set", setTotal, 5 * size}, {"Get (L1)", l1Total, 7 * size}, {"Get (Redis)", l2Total, 7 * size}} {
		if c.total < c.want {
			t.Errorf("%s reported %d bytes of bounded work, want at least %d: a stage does its work in one call", c.name, c.total, c.want)
		}
	}
}

// TestLargeValueConcurrency: with LargeValueConcurrency 1, a second large
// Set or Get waits while one holds the slot (its ctx bounds the wait and
// its error says so), small operations do not wait, and the waiter runs
// once the slot is free.
func TestLargeValueConcurrency(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 64 << 20, Encryption: encConfig(""), LargeValueConcurrency: 1})
	v := largeValue(LargeValueBytes)
	mustSet(t, c, "stored", v)
	entered, release := make(chan struct{}), make(chan struct{})
	var hold sync.Once
	c.large.Hook = func() {
		hold.Do(func() { // only the first large operation is held
			close(entered)
			<-release
		})
	}
	first := make(chan error, 1)
	go func() { first <- c.Set(bg, "first", v) }()
	select {
	case <-entered:
	case err := <-first:
		t.Fatalf("a large Set (%v) never took a slot", err)
	}

	short, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if err := c.Set(short, "second", v); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a large Set while the only slot is held = %v, want context.DeadlineExceeded", err)
	}
	short2, cancel2 := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel2()
	if _, err := c.GetBytes(short2, "stored"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a large Get while the only slot is held = %v, want context.DeadlineExceeded", err)
	}
	// Nothing was stored by the refused Set, and the entry the refused Get
	// meant to read is still there (a wait is not a bad entry).
	if _, err := c.GetBytes(bg, "second"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the Set that gave up stored something: %v", err)
	}
	if err := c.Set(bg, "small", []byte("x")); err != nil {
		t.Fatalf("a small Set waited for the large slot: %v", err)
	}
	if got, err := c.GetBytes(bg, "small"); err != nil || string(got) != "x" {
		t.Fatalf("small Get = %q, %v", got, err)
	}

	waiter := make(chan error, 1)
	go func() { waiter <- c.Set(bg, "third", v) }()
	select {
	case err := <-waiter:
		t.Fatalf("a large Set ran while the slot was held: %v", err)
	case <-time.After(20 * time.Millisecond): // a bound on a negative: nothing to wait for
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-waiter; err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"first", "third", "stored"} {
		if got, err := c.GetBytes(bg, k); err != nil || !bytes.Equal(got, v) {
			t.Fatalf("%s: %d bytes, %v", k, len(got), err)
		}
	}
}

// TestLargeValueConcurrencyDefault: by default GOMAXPROCS-1 large
// operations (at least one) run at once; UnboundedLargeValues removes the
// bound, and a negative setting is an ErrConfig.
func TestLargeValueConcurrencyDefault(t *testing.T) {
	// Not parallel: changes GOMAXPROCS.
	for _, tc := range []struct {
		name     string
		procs    int
		setting  int
		unbound  bool
		parallel int // how many may hold a slot at once (0: none is taken)
	}{
		{"default/GOMAXPROCS=3", 3, 0, false, 2},
		{"default/GOMAXPROCS=1", 1, 0, false, 1},
		{"explicit 2", 2, 2, false, 2},
		{"unbounded", 2, 0, true, 0}, // no slots: no Set waits or enters the hook
	} {
		t.Run(tc.name, func(t *testing.T) {
			prev := runtime.GOMAXPROCS(tc.procs)
			c := newClient(t, Options{L1MaxBytes: 64 << 20, LargeValueConcurrency: tc.setting, UnboundedLargeValues: tc.unbound})
			runtime.GOMAXPROCS(prev)
			v := largeValue(LargeValueBytes)
			inside := make(chan struct{}, 8)
			release := make(chan struct{})
			if tc.unbound != (c.large == nil) {
				t.Fatalf("large-work slots %v with UnboundedLargeValues %v", c.large, tc.unbound)
			}
			if c.large != nil {
				c.large.Hook = func() {
					inside <- struct{}{}
					<-release
				}
			}
			const n = 4
			done := make(chan error, n)
			for i := range n {
				go func() { done <- c.Set(bg, "k"+string(rune('a'+i)), v) }()
			}
			for range tc.parallel {
				select {
				case <-inside:
				case err := <-done:
					t.Fatalf("a large Set returned (%v) while %d should hold a slot", err, tc.parallel)
				}
			}
			if tc.parallel == 0 {
				for range n {
					if err := <-done; err != nil {
						t.Fatal(err)
					}
				}
				if len(inside) != 0 {
					t.Fatal("a large Set took a slot with UnboundedLargeValues")
				}
				return
			}
			select {
			case <-inside:
				t.Fatalf("more than %d large Sets held a slot at once", tc.parallel)
			case <-time.After(20 * time.Millisecond): // a bound on a negative
			}
			close(release)
			for range n {
				if err := <-done; err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestLargeOneShotAndChunkedReadEachOther: entries written on the chunked
// path (the default) and on the one-shot path (chunked.SetOneShot, how the
// library worked before) are read by the other, through Redis, with and
// without encryption and compression.
func TestLargeOneShotAndChunkedReadEachOther(t *testing.T) {
	// Not parallel: chunked.SetOneShot switches the path for the whole process.
	_, rdb := withRedis(t)
	v := largeValue(3<<20 + 17)
	for name, opts := range map[string]Options{
		"encrypted":         {Redis: rdb, Encryption: encConfig("")},
		"encrypted/nocompr": {Redis: rdb, Encryption: encConfig(""), DisableCompression: true},
		"plain":             {Redis: rdb},
	} {
		t.Run(name, func(t *testing.T) {
			c := newClient(t, opts) // no L1: every Get reads Redis
			for _, writeOneShot := range []bool{false, true} {
				chunked.SetOneShot(writeOneShot)
				err := c.Set(bg, "k", v)
				if err == nil {
					err = c.MSetWithTTL(bg, map[string]any{"m": v}, time.Minute)
				}
				chunked.SetOneShot(!writeOneShot)
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"k", "m"} {
					got, err := c.GetBytes(bg, k)
					if err != nil || !bytes.Equal(got, v) {
						t.Fatalf("written one-shot=%v, read one-shot=%v: %s = %d bytes, %v", writeOneShot, !writeOneShot, k, len(got), err)
					}
				}
				chunked.SetOneShot(false)
			}
		})
	}
}

// TestLargeSetAllocation: one Set of a large value allocates about twice
// the value (the msgpack payload and the entry, sealed in place), so with
// the caller's own value at most three times the value is live at once.
func TestLargeSetAllocation(t *testing.T) {
	// Not parallel: reads the process's allocation counter.
	c := newClient(t, Options{L1MaxBytes: 256 << 20, Encryption: encConfig("")})
	const size = 16 << 20
	v := largeValue(size)
	if err := c.Set(bg, "warm", []byte("x")); err != nil { // keys derived, pools warm
		t.Fatal(err)
	}
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	before := s[0].Value.Uint64()
	mustSet(t, c, "big", v)
	metrics.Read(s)
	allocated := s[0].Value.Uint64() - before
	ratio := float64(allocated) / size
	t.Logf("a %d MiB Set allocated %.3f× the value (%d bytes)", size>>20, ratio, allocated)
	if ratio > 2.1 {
		t.Fatalf("a large Set allocated %.2f× the value, want at most 2.1× (payload + entry)", ratio)
	}
}
