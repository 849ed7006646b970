package protocol

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// allocSink keeps the positive control's buffer reachable so the compiler
// cannot drop the allocation.
var allocSink []byte

// bytesAllocated returns the cumulative heap bytes requested while f ran.
// TotalAlloc only grows, so a buffer allocated and freed inside f still
// counts: it is a high-water-safe measure, unlike a live-heap delta. The
// tests using it do not run in parallel, so the count is this call's.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// hostileLimit is far below every original_size the hostile envelopes
// claim; the read path itself allocates only its error value.
const hostileLimit = 64 << 10

// For the size-cap and ratio reject vectors (and a header claiming the full
// 512 MiB from 18 bytes), the read must reject with the expected error and
// allocate nowhere near original_size. The positive control re-runs the
// ratio vector with a hook that allocates original_size right after the
// decode step, inside the read path, as a reserve-first reader would: the
// same probe must see it.
// Every check runs before a buffer is sized (WIRE-11), and the probe bounds
// what the read allocates (WIRE-17) under the spec's measurement rules, with
// its positive control (WIRE-18).
func TestEnvelopeHostileHeaderAllocation(t *testing.T) {
	rows := map[string][]byte{}
	for _, r := range vectors.Group[rejectRow](t, "wire-format.json", "reject_vectors") {
		rows[r.Name] = vectors.Hex(t, r.EnvelopeHex)
	}
	claim512 := vectors.Hex(t, "94c412"+ssBlock+ssChecksum+"ce20000000"+ssFormat)
	cases := []struct {
		name   string
		env    []byte
		claim  uint64
		reason string
	}{
		{"reject_original_size_over_cap", rows["reject_original_size_over_cap"], MaxEnvelopeOriginalSize + 1, reasonOriginalTooLarge},
		{"reject_ratio_bomb", rows["reject_ratio_bomb"], 1000001, reasonRatio},
		{"claim_512MiB_from_18B", claim512, MaxEnvelopeOriginalSize, reasonRatio},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.env == nil {
				t.Fatalf("vector missing")
			}
			var err error
			n := bytesAllocated(func() { _, err = OpenEnvelope(nil, c.env) })
			wantEnvelopeErr(t, err, ErrTooLarge, c.reason)
			if n >= hostileLimit || n >= c.claim {
				t.Fatalf("read allocated %d B for a %d B claim", n, c.claim)
			}
		})
	}
	t.Run("positive_control", func(t *testing.T) {
		afterDecodeHook = func(size uint64) { allocSink = make([]byte, size) }
		defer func() { afterDecodeHook, allocSink = nil, nil }()
		var err error
		n := bytesAllocated(func() { _, err = OpenEnvelope(nil, rows["reject_ratio_bomb"]) })
		wantEnvelopeErr(t, err, ErrTooLarge, reasonRatio)
		if n < 1000001 {
			t.Fatalf("probe missed a reserve-first buffer: saw %d B", n)
		}
	})
}

func TestEnvelopeOpenAllocs(t *testing.T) {
	in := fixture.JSONish(rand.New(rand.NewPCG(7, 8)), 16<<10)
	env, err := SealEnvelope(nil, in, FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, 0, len(in))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := OpenEnvelope(dst, env); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("OpenEnvelope 16 KiB bin into a sized dst: %v allocs/op", allocs)
	if allocs != 0 {
		t.Fatalf("OpenEnvelope allocated %v times into a sized dst", allocs)
	}

	// The legacy form needs one contiguous copy of its block, no more.
	e, _ := ParseEnvelope(env)
	legacy := legacyEncode(e.Compressed, beUint64(e.Checksum), e.OriginalSize, e.Format)
	allocs = testing.AllocsPerRun(20, func() {
		if _, err := OpenEnvelope(dst, legacy); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("OpenEnvelope 16 KiB legacy into a sized dst: %v allocs/op", allocs)
	if allocs > 1 {
		t.Fatalf("legacy OpenEnvelope allocated %v times", allocs)
	}
}

func TestEnvelopeSealAllocs(t *testing.T) {
	in := fixture.JSONish(rand.New(rand.NewPCG(9, 10)), 16<<10)
	dst := make([]byte, 0, SealEnvelopeBound(len(in)))
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := SealEnvelope(dst, in, FormatMsgpack); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("SealEnvelope 16 KiB into a sized dst: %v allocs/op (race %v)", allocs, raceEnabled)
	if allocs != 0 && !raceEnabled {
		t.Fatalf("SealEnvelope allocated %v times into a sized dst", allocs)
	}
}

func TestEnvelopeParseAllocs(t *testing.T) {
	env, err := SealEnvelope(nil, []byte("hello, cachekit!"), FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := ParseEnvelope(env); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("ParseEnvelope of a bin envelope allocated %v times", allocs)
	}
}
