package lz4block

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/pierrec/lz4/v4"
)

// lz4Kind is one family of test inputs; gen returns n bytes of it.
type lz4Kind struct {
	name string
	gen  func(rng *rand.Rand, n int) []byte
}

// lz4Kinds are the input families every compressor test runs over:
// degenerate runs, short periods (the overlapping-match cases), text, noise,
// the benchmark fixture and mixes of compressible and incompressible parts.
func lz4Kinds() []lz4Kind {
	kinds := []lz4Kind{
		{"zeros", func(_ *rand.Rand, n int) []byte { return make([]byte, n) }},
		{"jsonish", fixture.JSONish},
		{"prose", lz4Prose},
		{"random", fixture.RandomBytes},
		{"fixture", func(_ *rand.Rand, n int) []byte { return fixture.NewBytes(n) }},
		{"random_then_repeat", func(rng *rand.Rand, n int) []byte {
			half := fixture.RandomBytes(rng, (n+1)/2)
			return append(half, half[:n-len(half)]...)
		}},
		{"random_zero_stripes", func(rng *rand.Rand, n int) []byte {
			b := fixture.RandomBytes(rng, n)
			for i := range b {
				if i/37%2 == 1 {
					b[i] = 0
				}
			}
			return b
		}},
		{"text_then_random", func(rng *rand.Rand, n int) []byte {
			return append(fixture.JSONish(rng, n/2), fixture.RandomBytes(rng, n-n/2)...)
		}},
	}
	for p := 1; p <= 17; p++ {
		kinds = append(kinds, lz4Kind{fmt.Sprintf("period%d", p), func(rng *rand.Rand, n int) []byte {
			unit := fixture.RandomBytes(rng, p)
			b := make([]byte, n)
			for i := range b {
				b[i] = unit[i%p]
			}
			return b
		}})
	}
	return kinds
}

// lz4Prose returns n bytes of English-like words and punctuation.
func lz4Prose(rng *rand.Rand, n int) []byte {
	words := strings.Fields("the cache stores each value sealed under a key derived from " +
		"the tenant and the namespace so that a reader holding another key learns nothing " +
		"about what it holds while the second level keeps a copy for every process")
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(9) == 0 {
			b.WriteString(". ")
		} else {
			b.WriteByte(' ')
		}
	}
	return b.Bytes()[:n]
}

// lz4Stats records which token-length boundaries, and which match offsets,
// a set of blocks exercised.
type lz4Stats struct {
	lits, matches, offsets map[int]bool
	matchCount             int
}

func newLZ4Stats() *lz4Stats {
	return &lz4Stats{lits: map[int]bool{}, matches: map[int]bool{}, offsets: map[int]bool{}}
}

// The block format's end-of-block rules, restated here rather than taken
// from the compressor's constants so that the checker cannot drift with
// them.
const (
	specLastLiterals = 5  // the last 5 bytes are always literals
	specMFLimit      = 12 // the last match starts at least 12 bytes before the end
)

// checkLZ4Block walks block as the LZ4 block format defines it, decoding it
// independently of any library, and returns an error unless it decodes to
// exactly want and respects every end-of-block rule: each match has length
// at least 4 and an offset in 1..65535 reaching only produced bytes, starts
// at least 12 bytes before the end and ends at least 5 bytes before it, the
// block ends with a literals-only sequence, and an input shorter than 13
// bytes is literals only. st, when not nil, records the lengths and
// offsets seen.
func checkLZ4Block(block, want []byte, st *lz4Stats) error {
	n := len(want)
	out := make([]byte, 0, n)
	readLen := func(i, nibble int) (int, int, error) {
		v := nibble
		if nibble != 15 {
			return v, i, nil
		}
		for {
			if i >= len(block) {
				return 0, i, errors.New("length extension runs past the block")
			}
			b := block[i]
			i++
			v += int(b)
			if b != 255 {
				return v, i, nil
			}
		}
	}
	i := 0
	for {
		if i >= len(block) {
			return errors.New("block ends before its last sequence")
		}
		tok := int(block[i])
		i++
		lit, j, err := readLen(i, tok>>4)
		if err != nil {
			return err
		}
		i = j
		if lit > len(block)-i {
			return fmt.Errorf("literal run of %d overruns the block", lit)
		}
		out = append(out, block[i:i+lit]...)
		i += lit
		if st != nil {
			st.lits[lit] = true
		}
		if i == len(block) {
			// The last sequence: literals only.
			if tok&15 != 0 {
				return errors.New("last sequence's token claims a match")
			}
			if lit < min(n, specLastLiterals) {
				return fmt.Errorf("last sequence has %d literals, want at least 5", lit)
			}
			break
		}
		if len(block)-i < 2 {
			return errors.New("offset runs past the block")
		}
		off := int(block[i]) | int(block[i+1])<<8
		i += 2
		if off == 0 || off > len(out) {
			return fmt.Errorf("offset %d at output position %d", off, len(out))
		}
		ml, j, err := readLen(i, tok&15)
		if err != nil {
			return err
		}
		i = j
		ml += 4
		start := len(out)
		if n < specMFLimit+1 {
			return fmt.Errorf("match in a %d-byte input", n)
		}
		if start > n-specMFLimit {
			return fmt.Errorf("match starts at %d, less than 12 bytes before the end %d", start, n)
		}
		if start+ml > n-specLastLiterals {
			return fmt.Errorf("match [%d,%d) reaches into the last 5 bytes of %d", start, start+ml, n)
		}
		for k := range ml {
			out = append(out, out[start-off+k])
		}
		if st != nil {
			st.matches[ml] = true
			st.offsets[off] = true
			st.matchCount++
		}
	}
	if !bytes.Equal(out, want) {
		return fmt.Errorf("block decodes to %d bytes that differ from the %d-byte input", len(out), n)
	}
	return nil
}

// checkLZ4Compress compresses in with Compress and fails unless the
// block fits the bound, nothing past it was written, and it passes
// checkLZ4Block and decodes back through pierrec's decoder. It returns the
// block.
func checkLZ4Compress(t testing.TB, in []byte, st *lz4Stats) []byte {
	t.Helper()
	bound := lz4.CompressBlockBound(len(in))
	dst := bytes.Repeat([]byte{0xa5}, bound)
	m := Compress(dst, in)
	if m <= 0 || m > bound {
		t.Fatalf("%d-byte input: block of %d bytes, bound %d", len(in), m, bound)
	}
	if bytes.Count(dst[m:], []byte{0xa5}) != bound-m {
		t.Fatalf("%d-byte input: bytes past the %d-byte block were written", len(in), m)
	}
	block := dst[:m]
	if err := checkLZ4Block(block, in, st); err != nil {
		t.Fatalf("%d-byte input: %v\nblock %x", len(in), err, block)
	}
	got := make([]byte, len(in))
	k, err := lz4.UncompressBlock(block, got)
	if err != nil || k != len(in) || !bytes.Equal(got, in) {
		t.Fatalf("%d-byte input: pierrec decodes %d bytes, err %v, equal %v", len(in), k, err, bytes.Equal(got[:max(k, 0)], in))
	}
	return block
}

// lz4LargeSizes are the sizes past 300 the round-trip tests cover, up to
// the 64 KiB the compressor accepts. 524 to 526 random bytes are literal
// runs, and 535 to 537 zeros matches of 528 to 530 bytes, either side of
// the second 255-byte length-extension step.
var lz4LargeSizes = []int{511, 524, 525, 526, 535, 536, 537, 1000, 1024, 4095, 4096, 16 << 10, 40000, 65535, 65536}

// TestLZ4CompressRoundTrip: every block this package's compressor writes,
// for inputs of every kind up to 300 bytes and at large sizes, decodes to
// its input, reaching both sides of every length-encoding boundary: the
// writer is validated by decoding its output (WIRE-6).
func TestLZ4CompressRoundTrip(t *testing.T) {
	st := newLZ4Stats()
	for _, k := range lz4Kinds() {
		t.Run(k.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, uint64(len(k.name))))
			for n := 0; n <= 300; n++ {
				checkLZ4Compress(t, k.gen(rng, n), st)
			}
			for _, n := range lz4LargeSizes {
				checkLZ4Compress(t, k.gen(rng, n), st)
			}
		})
	}
	// The corpus must reach both sides of every length-encoding boundary:
	// the token nibble's limit (15) and the first two 255-byte extension
	// steps, for literals and for matches (whose nibble holds length-4).
	for _, l := range []int{0, 14, 15, 16, 269, 270, 271, 524, 525, 526} {
		if !st.lits[l] {
			t.Errorf("no block had a literal run of %d", l)
		}
	}
	for _, l := range []int{4, 18, 19, 20, 273, 274, 275, 528, 529, 530} {
		if !st.matches[l] {
			t.Errorf("no block had a match of length %d", l)
		}
	}
}

// A literal-only block is the one answer for inputs of at most 12 bytes,
// and the empty input is the one-byte empty block.
func TestLZ4CompressShortInputs(t *testing.T) {
	for n := 0; n <= specMFLimit; n++ {
		in := make([]byte, n) // zeros: as compressible as it gets
		block := checkLZ4Compress(t, in, nil)
		want := append([]byte{byte(n << 4)}, in...)
		if !bytes.Equal(block, want) {
			t.Fatalf("%d zeros: block %x, want literals only %x", n, block, want)
		}
	}
	// From 13 bytes on, a run is compressed.
	if block := checkLZ4Compress(t, make([]byte, 13), nil); len(block) >= 14 {
		t.Fatalf("13 zeros were not compressed: %x", block)
	}
}

// A repeat planted near the end is used exactly when its start keeps 12
// bytes after it: at n-12 it must be taken (with the 6 bytes the end margin
// leaves it), at n-11 and later it must not. The inputs are short enough
// (at most 32 probes) that the search never strides past a position.
func TestLZ4CompressEndOfBlockBoundaries(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{24, 36, 44} {
		for p := n - 16; p <= n-9; p++ {
			in := fixture.RandomBytes(rng, n)
			copy(in[p:], in[3:3+min(8, n-p)])
			st := newLZ4Stats()
			checkLZ4Compress(t, in, st)
			if took := st.matchCount > 0; took != (p <= n-specMFLimit) {
				t.Errorf("n %d, repeat at %d: match emitted %v", n, p, took)
			}
		}
	}
}

// A reused table holds positions from the previous, longer input; none of
// them may leak into the next block (the table is cleared per call).
func TestLZ4CompressReusedTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	tab := new(table)
	for _, k := range lz4Kinds() {
		for _, n := range []int{65536, 20000, 4096, 1000, 300, 100, 40, 13} {
			in := k.gen(rng, n)
			dst := make([]byte, lz4.CompressBlockBound(n))
			m := tab.compress(dst, in)
			if err := checkLZ4Block(dst[:m], in, nil); err != nil {
				t.Fatalf("%s, %d bytes after a longer input: %v", k.name, n, err)
			}
		}
	}
}

// The block checker must reject each end-of-block and encoding violation,
// or the round-trip tests prove nothing about them.
func TestLZ4CheckBlockRejects(t *testing.T) {
	z := func(n int) []byte { return make([]byte, n) }
	cases := []struct {
		name  string
		block []byte
		want  []byte
		err   string
	}{
		// 1 literal, a 16-byte match at offset 1, 3 literals.
		{"match_into_last_5", []byte{0x1c, 0, 1, 0, 0x30, 0, 0, 0}, z(20), "last 5 bytes"},
		// 9 literals, a 4-byte match starting at 9 of 18, 5 literals.
		{"match_starts_too_late", append(append([]byte{0x90}, z(9)...), 1, 0, 0x50, 0, 0, 0, 0, 0), z(18), "less than 12 bytes"},
		{"match_in_short_input", []byte{0x10, 0, 1, 0, 0x50, 0, 0, 0, 0, 0}, z(10), "10-byte input"},
		{"offset_zero", []byte{0x10, 0, 0, 0, 0x50, 0, 0, 0, 0, 0}, z(20), "offset 0"},
		{"offset_past_output", []byte{0x10, 0, 2, 0, 0x50, 0, 0, 0, 0, 0}, z(20), "offset 2"},
		{"ends_with_match", []byte{0x1f, 0, 1, 0, 0x00}, z(40), "before its last sequence"},
		{"truncated_extension", []byte{0xf0, 255}, z(270), "past the block"},
		{"literals_overrun", []byte{0x50, 0, 0}, z(5), "overruns"},
		{"wrong_bytes", []byte{0x30, 1, 2, 3}, []byte{1, 2, 4}, "differ"},
		{"too_short", []byte{0x50, 1, 2, 3, 4, 5}, []byte{1, 2, 3, 4, 5, 6}, "differ"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkLZ4Block(c.block, c.want, nil)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Fatalf("%x for %d bytes: got %v, want an error with %q", c.block, len(c.want), err, c.err)
			}
		})
	}
	// And it accepts valid blocks: 1 literal, a 14-byte match at offset 1
	// and 5 final literals; the same with the match starting exactly 12
	// bytes before the end and an extended literal length.
	valid := []struct{ block, want []byte }{
		{[]byte{0x1a, 0, 1, 0, 0x50, 0, 0, 0, 0, 0}, z(20)},
		{append(append(append([]byte{0xf0, 3}, z(18)...), 1, 0, 0x80), z(8)...), z(30)},
		{[]byte{0x00}, nil},
	}
	for _, v := range valid {
		if err := checkLZ4Block(v.block, v.want, nil); err != nil {
			t.Fatalf("rejected valid block %x: %v", v.block, err)
		}
	}
}

// The compressor reproduces, byte for byte, the LZ4 block of every bin row
// of the cross-SDK wire vectors (which lz4_flex produced).
func TestLZ4CompressReproducesWireVectors(t *testing.T) {
	checked := 0
	for _, r := range binWireRows(t) {
		if got := checkLZ4Compress(t, r.input, nil); !bytes.Equal(got, r.block) {
			t.Errorf("%s: block %x, vector %x", r.name, got, r.block)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no bin vectors")
	}
}

// wireBlock is a bin row of the cross-SDK wire vectors: its input and the
// LZ4 block its envelope holds.
type wireBlock struct {
	name         string
	input, block []byte
}

// binWireRows returns the bin rows of wire-format.json's "vectors" group.
// The block is read from the envelope's first element, a MessagePack bin
// (bin8, bin16 or bin32) inside the fixarray(4) that starts the envelope;
// package protocol's envelope tests check the rest of each envelope.
func binWireRows(tb testing.TB) []wireBlock {
	tb.Helper()
	type row struct {
		Name             string `json:"name"`
		EnvelopeHex      string `json:"envelope_hex"`
		InputHex         string `json:"input_hex"`
		EnvelopeEncoding string `json:"envelope_encoding"`
	}
	var out []wireBlock
	for _, r := range vectors.Group[row](tb, "wire-format.json", "vectors") {
		if r.EnvelopeEncoding == "" {
			continue // legacy array-of-integers twin of a bin row
		}
		env := vectors.Hex(tb, r.EnvelopeHex)
		if len(env) < 7 || env[0] != 0x94 {
			tb.Fatalf("%s: envelope does not start with fixarray(4)", r.Name)
		}
		var n, head int // the bin's length, and where its bytes start
		switch env[1] {
		case 0xc4:
			n, head = int(env[2]), 3
		case 0xc5:
			n, head = int(binary.BigEndian.Uint16(env[2:])), 4
		case 0xc6:
			n, head = int(binary.BigEndian.Uint32(env[2:])), 6
		default:
			tb.Fatalf("%s: first element is not a bin", r.Name)
		}
		if n > len(env)-head {
			tb.Fatalf("%s: bin of %d bytes overruns the envelope", r.Name, n)
		}
		out = append(out, wireBlock{r.Name, vectors.Hex(tb, r.InputHex), env[head : head+n]})
	}
	return out
}
