package lz4block

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pierrec/lz4/v4"

	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// The corpus in testdata/corpus holds blocks that the reference C liblz4
// decoded back to their inputs when testdata/gen_corpus.py generated it
// (testdata/README.md). The tests here hold this package to it in every
// go test: the writers must still produce those exact blocks, and the
// decoder must read them, and liblz4's own blocks of the same inputs, back.

// corpusWrite, when set, makes TestCorpusDecodedByCLiblz4 write every
// recipe's input and block to that directory instead of checking the
// committed corpus; gen_corpus.py runs it so, then has liblz4 decode them.
var corpusWrite = flag.String("corpus.write", "", "write corpus candidates (inputs and blocks) to this directory and check nothing")

// The writers a corpus block comes from.
const (
	writerCompress    = "Compress"    // Compress, for inputs of up to MaxCompressLen
	writerPutLiterals = "PutLiterals" // PutLiterals, for any input
	// pierrec's compressor, which protocol.SealEnvelope uses for a
	// compressible original larger than MaxCompressLen: not this
	// package's code, but blocks this module writes all the same.
	writerPierrec = "pierrec"
)

// corpusRecipe is how one corpus input is made and which writer blocks it.
// gen is deterministic: the corpus commits only small inputs, and the test
// remakes the others from their recipes (checking them by SHA-256).
type corpusRecipe struct {
	name, writer string
	gen          func() []byte
}

// corpusRecipes returns the corpus's inputs: the empty and one-byte
// inputs, both sides of the 13-byte threshold below which a block is
// literals only, literal runs and matches either side of the length
// encoding's 255-byte steps, overlapping matches at offsets 1 to 4, text,
// noise and mixes, both sides of the 8 KiB switch to the 6-byte hash,
// inputs of 64 KiB and one byte less, offsets near the 16-bit limit, and
// originals of a few hundred KiB as protocol.SealEnvelope writes them.
func corpusRecipes() []corpusRecipe {
	rng := func(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(19, seed)) }
	fill := func(unit string, n int) []byte { return bytes.Repeat([]byte(unit), n/len(unit)+1)[:n] }
	c := func(name string, gen func() []byte) corpusRecipe { return corpusRecipe{name, writerCompress, gen} }
	return []corpusRecipe{
		c("empty", func() []byte { return []byte{} }),
		c("one_byte", func() []byte { return []byte{'x'} }),
		c("zeros_12", func() []byte { return make([]byte, 12) }),
		c("zeros_13", func() []byte { return make([]byte, 13) }),
		c("zeros_26", func() []byte { return make([]byte, 26) }),   // a match of 19: nibble 15, extension 0
		c("zeros_281", func() []byte { return make([]byte, 281) }), // a match of 274: extension 255, 0
		c("run_537", func() []byte { return fill("\xab", 537) }),   // a match of 530 at offset 1: extension 255, 255, 1
		c("short_text", func() []byte { return []byte("cachekit stores values; cachekit stores keys; cachekit stores both.") }),
		c("random_16", func() []byte { return fixture.RandomBytes(rng(1), 16) }),
		c("random_270", func() []byte { return fixture.RandomBytes(rng(2), 270) }), // literals: 15 + 255 + 0
		c("random_525", func() []byte { return fixture.RandomBytes(rng(3), 525) }), // literals: 15 + 255 + 255 + 0
		c("period_2", func() []byte { return fill("ab", 1000) }),
		c("period_3", func() []byte { return fill("xyz", 1000) }),
		c("period_4", func() []byte { return fill("1234", 1000) }),
		c("periods_1_to_4", func() []byte {
			r := rng(4)
			var b []byte
			for i := 0; len(b) < 4096; i++ {
				b = append(b, fixture.RandomBytes(r, 1+i%23)...)
				b = append(b, fill(string(fixture.RandomBytes(r, 1+i%4)), 4+i*7%61)...)
			}
			return b[:4096]
		}),
		c("prose_300", func() []byte { return lz4Prose(rng(5), 300) }),
		c("jsonish_1024", func() []byte { return fixture.JSONish(rng(6), 1024) }),
		c("jsonish_8191", func() []byte { return fixture.JSONish(rng(7), wideHashMin-1) }),
		c("jsonish_8192", func() []byte { return fixture.JSONish(rng(7), wideHashMin) }),
		c("prose_16384", func() []byte { return lz4Prose(rng(8), 16384) }),
		c("jsonish_65536", func() []byte { return fixture.JSONish(rng(9), MaxCompressLen) }),
		c("fixture_4096", func() []byte { return fixture.NewBytes(4096) }),
		c("random_4096", func() []byte { return fixture.RandomBytes(rng(10), 4096) }),
		c("random_zero_stripes_4096", func() []byte {
			b := fixture.RandomBytes(rng(11), 4096)
			for i := range b {
				if i/37%2 == 1 {
					b[i] = 0
				}
			}
			return b
		}),
		c("text_then_random_16384", func() []byte {
			return append(fixture.JSONish(rng(12), 8192), fixture.RandomBytes(rng(13), 8192)...)
		}),
		c("random_then_repeat_20000", func() []byte {
			half := fixture.RandomBytes(rng(14), 10000)
			return append(half, half...)
		}),
		c("random_65535", func() []byte { return fixture.RandomBytes(rng(15), MaxCompressLen-1) }),
		c("random_65536", func() []byte { return fixture.RandomBytes(rng(16), MaxCompressLen) }),
		c("zeros_65536", func() []byte { return make([]byte, MaxCompressLen) }),
		c("far_offset_65536", func() []byte {
			// The first 400 bytes again at the end: matches at offsets
			// above 65000, near the format's 65535.
			b := fixture.RandomBytes(rng(17), MaxCompressLen)
			copy(b[MaxCompressLen-420:], b[:400])
			return b
		}),
		{"literals_14", writerPutLiterals, func() []byte { return fixture.RandomBytes(rng(18), 14) }},
		{"literals_15", writerPutLiterals, func() []byte { return fixture.RandomBytes(rng(19), 15) }},
		{"literals_307200", writerPutLiterals, func() []byte { return fixture.RandomBytes(rng(20), 300<<10) }},
		{"pierrec_jsonish_65537", writerPierrec, func() []byte { return fixture.JSONish(rng(21), MaxCompressLen+1) }},
		{"pierrec_jsonish_307200", writerPierrec, func() []byte { return fixture.JSONish(rng(22), 300<<10) }},
		{"pierrec_prose_204800", writerPierrec, func() []byte { return lz4Prose(rng(23), 200<<10) }},
	}
}

// writeCorpusBlock returns the block writer makes of in.
func writeCorpusBlock(t testing.TB, writer string, in []byte) []byte {
	t.Helper()
	dst := make([]byte, lz4.CompressBlockBound(len(in)))
	var m int
	switch writer {
	case writerCompress:
		m = Compress(dst, in)
	case writerPutLiterals:
		m = PutLiterals(dst, in)
	case writerPierrec:
		var c lz4.Compressor
		var err error
		if m, err = c.CompressBlock(in, dst); err != nil {
			t.Fatalf("pierrec: %v", err)
		}
	default:
		t.Fatalf("unknown writer %q", writer)
	}
	if m <= 0 {
		t.Fatalf("%s wrote no block for %d bytes", writer, len(in))
	}
	return dst[:m]
}

// corpusManifest is testdata/corpus/manifest.json, which gen_corpus.py
// writes once liblz4 has decoded every block.
type corpusManifest struct {
	Liblz4Version string        `json:"liblz4_version"`
	Entries       []corpusEntry `json:"entries"`
}

// corpusEntry is one corpus input and its blocks. A file name is empty when
// the file is not committed (it would be large); the SHA-256 is always
// there. CBlockFile is liblz4's own block of the input (LZ4_compress_default),
// committed only when small.
type corpusEntry struct {
	Name         string `json:"name"`
	Writer       string `json:"writer"`
	InputLen     int    `json:"input_len"`
	InputSHA256  string `json:"input_sha256"`
	InputFile    string `json:"input_file"`
	BlockLen     int    `json:"block_len"`
	BlockSHA256  string `json:"block_sha256"`
	BlockFile    string `json:"block_file"`
	CBlockLen    int    `json:"c_block_len"`
	CBlockSHA256 string `json:"c_block_sha256"`
	CBlockFile   string `json:"c_block_file"`
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// loadCorpus reads the manifest and fails unless it lists exactly the
// recipes, each under its recipe's writer.
func loadCorpus(t *testing.T) (corpusManifest, map[string]corpusRecipe) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "corpus", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m corpusManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	recipes := map[string]corpusRecipe{}
	for _, r := range corpusRecipes() {
		recipes[r.name] = r
	}
	var names []string
	for _, e := range m.Entries {
		r, ok := recipes[e.Name]
		if !ok || r.writer != e.Writer {
			t.Fatalf("manifest entry %s (%s) has no recipe with that writer: rerun testdata/gen_corpus.py", e.Name, e.Writer)
		}
		names = append(names, e.Name)
	}
	slices.Sort(names)
	if len(names) != len(recipes) || len(slices.Compact(names)) != len(recipes) {
		t.Fatalf("manifest has %d distinct of %d entries for %d recipes: rerun testdata/gen_corpus.py", len(slices.Compact(names)), len(m.Entries), len(recipes))
	}
	if m.Liblz4Version == "" {
		t.Fatal("manifest names no liblz4 version")
	}
	return m, recipes
}

// corpusFile reads a committed corpus file.
func corpusFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// corpusInput returns e's input: the committed file, or the recipe's
// output, which must be the input liblz4 saw (by length and SHA-256).
func corpusInput(t *testing.T, e corpusEntry, r corpusRecipe) []byte {
	t.Helper()
	var in []byte
	if e.InputFile != "" {
		in = corpusFile(t, e.InputFile)
	} else {
		in = r.gen()
	}
	if len(in) != e.InputLen || sha256Hex(in) != e.InputSHA256 {
		t.Fatalf("%s: the input (%d bytes) is not the one liblz4 saw (%d bytes, SHA-256 %s): rerun testdata/gen_corpus.py if the recipe changed on purpose",
			e.Name, len(in), e.InputLen, e.InputSHA256)
	}
	return in
}

// TestCorpusDecodedByCLiblz4: for every corpus input, (a) the writer still
// produces, byte for byte, the block that the reference C liblz4 decoded
// back to the input when the corpus was generated, and (b) Decompress, and
// the Go decoder for large outputs on its own, decode that block back to
// the input. Every block also passes checkLZ4Block's end-of-block rules,
// and Compress's blocks must reach match offsets 1 to 4 and above 65000,
// and literal runs and matches either side of the token nibble's limit and
// at the length extension's first two 255-byte steps.
func TestCorpusDecodedByCLiblz4(t *testing.T) {
	if *corpusWrite != "" {
		writeCorpusCandidates(t, *corpusWrite)
		return
	}
	m, recipes := loadCorpus(t)
	t.Logf("%d entries, decoded by liblz4 %s at generation", len(m.Entries), m.Liblz4Version)
	st := newLZ4Stats()
	for _, e := range m.Entries {
		in := corpusInput(t, e, recipes[e.Name])
		ours := writeCorpusBlock(t, e.Writer, in)

		// (a) Our writer's block is the one liblz4 decoded.
		block := ours
		if e.BlockFile != "" {
			block = corpusFile(t, e.BlockFile)
		}
		if len(block) != e.BlockLen || sha256Hex(block) != e.BlockSHA256 {
			t.Fatalf("%s: the committed block does not match the manifest", e.Name)
		}
		if !bytes.Equal(ours, block) {
			t.Errorf("%s: %s writes a %d-byte block (SHA-256 %s), not the %d-byte block liblz4 %s decoded (SHA-256 %s)",
				e.Name, e.Writer, len(ours), sha256Hex(ours), e.BlockLen, m.Liblz4Version, e.BlockSHA256)
			continue
		}

		// (b) Our decoders read the committed block back.
		out := make([]byte, len(in))
		if n, err := Decompress(block, out); err != nil || n != len(in) || !bytes.Equal(out, in) {
			t.Errorf("%s: Decompress = (%d, %v), output equal %v", e.Name, n, err, bytes.Equal(out, in))
		}
		if len(in) > 0 {
			clear(out)
			if n, err := decodeLarge(block, out); err != nil || n != len(in) || !bytes.Equal(out, in) {
				t.Errorf("%s: decodeLarge = (%d, %v), output equal %v", e.Name, n, err, bytes.Equal(out, in))
			}
		}
		var bst *lz4Stats
		if e.Writer == writerCompress {
			bst = st
		}
		if err := checkLZ4Block(block, in, bst); err != nil {
			t.Errorf("%s: %v", e.Name, err)
		}
	}
	for _, off := range []int{1, 2, 3, 4} {
		if !st.offsets[off] {
			t.Errorf("no Compress block of the corpus has a match at offset %d", off)
		}
	}
	far := 0
	for off := range st.offsets {
		far = max(far, off)
	}
	if far <= 65000 {
		t.Errorf("the corpus's farthest match offset is %d, want one above 65000", far)
	}
	for _, l := range []int{0, 14, 15, 16, 270, 525} {
		if !st.lits[l] {
			t.Errorf("no Compress block of the corpus has a literal run of %d", l)
		}
	}
	for _, l := range []int{5, 18, 19, 274, 530} {
		if !st.matches[l] {
			t.Errorf("no Compress block of the corpus has a match of length %d", l)
		}
	}
}

// TestCorpusCBlocksDecoded: Decompress, and the Go decoder for large
// outputs on its own, read back liblz4's own blocks (LZ4_compress_default)
// of the corpus inputs, where they are committed.
func TestCorpusCBlocksDecoded(t *testing.T) {
	if *corpusWrite != "" {
		t.Skip("writing corpus candidates")
	}
	m, recipes := loadCorpus(t)
	checked := 0
	for _, e := range m.Entries {
		if e.CBlockFile == "" {
			continue
		}
		in := corpusInput(t, e, recipes[e.Name])
		block := corpusFile(t, e.CBlockFile)
		if len(block) != e.CBlockLen || sha256Hex(block) != e.CBlockSHA256 {
			t.Fatalf("%s: the committed liblz4 block does not match the manifest", e.Name)
		}
		out := make([]byte, len(in))
		if n, err := Decompress(block, out); err != nil || n != len(in) || !bytes.Equal(out, in) {
			t.Errorf("%s: liblz4's block: Decompress = (%d, %v), output equal %v", e.Name, n, err, bytes.Equal(out, in))
		}
		if len(in) > 0 {
			clear(out)
			if n, err := decodeLarge(block, out); err != nil || n != len(in) || !bytes.Equal(out, in) {
				t.Errorf("%s: liblz4's block: decodeLarge = (%d, %v), output equal %v", e.Name, n, err, bytes.Equal(out, in))
			}
		}
		checked++
	}
	if checked < len(m.Entries)/2 {
		t.Fatalf("only %d of %d entries have a committed liblz4 block", checked, len(m.Entries))
	}
}

// writeCorpusCandidates writes, for every recipe, NAME.in and NAME.lz4
// (its writer's block) to dir, and recipes.json listing names and writers.
func writeCorpusCandidates(t *testing.T, dir string) {
	type candidate struct {
		Name   string `json:"name"`
		Writer string `json:"writer"`
	}
	var list []candidate
	for _, r := range corpusRecipes() {
		in := r.gen()
		block := writeCorpusBlock(t, r.writer, in)
		for ext, b := range map[string][]byte{".in": in, ".lz4": block} {
			if err := os.WriteFile(filepath.Join(dir, r.name+ext), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		list = append(list, candidate{r.name, r.writer})
	}
	raw, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "recipes.json"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d corpus candidates to %s", len(list), dir)
}
