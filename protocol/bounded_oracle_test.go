package protocol

import (
	"fmt"
	"slices"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// iopRef is an independent, recursive and unbounded reading of a document's
// headers: the declared slot sum, the nesting depth and whether the root
// item completes. The tests use it as an oracle for CheckMsgpack.
type iopRef struct {
	b         []byte
	slots     uint64
	depth     int
	truncated bool
	reserved  bool
}

func iopRefWalk(b []byte) (r iopRef, end int) {
	r.b = b
	end = r.item(0, 0)
	return r, end
}

func (r *iopRef) skip(pos int, n uint64) int {
	if n > uint64(len(r.b)-pos) {
		r.truncated = true
		return len(r.b)
	}
	return pos + int(n)
}

func (r *iopRef) item(pos, depth int) int {
	if pos >= len(r.b) {
		r.truncated = true
		return pos
	}
	c := r.b[pos]
	pos++
	lenField := func(w int) (uint64, bool) {
		if len(r.b)-pos < w {
			r.truncated = true
			return 0, false
		}
		var n uint64
		for _, x := range r.b[pos : pos+w] {
			n = n<<8 | uint64(x)
		}
		pos += w
		return n, true
	}
	coll := func(n uint64) int {
		r.slots += n
		r.depth = max(r.depth, depth+1)
		for i := uint64(0); i < n && !r.truncated; i++ {
			pos = r.item(pos, depth+1)
		}
		return pos
	}
	switch {
	case c <= 0x7f || c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		return pos
	case c <= 0x8f:
		return coll(2 * uint64(c&0xf))
	case c <= 0x9f:
		return coll(uint64(c & 0xf))
	case c <= 0xbf:
		r.slots += uint64(c & 0x1f)
		return r.skip(pos, uint64(c&0x1f))
	case c == 0xc1:
		r.reserved = true
		return pos
	}
	if n, ok := iopRefFixed[c]; ok {
		return r.skip(pos, n)
	}
	n, ok := lenField(iopRefWidths[c])
	if !ok {
		return len(r.b)
	}
	switch c {
	case 0xdc, 0xdd:
		return coll(n)
	case 0xde, 0xdf:
		return coll(2 * n)
	case 0xc7, 0xc8, 0xc9:
		r.slots += n
		return r.skip(pos, n+1)
	default:
		r.slots += n
		return r.skip(pos, n)
	}
}

// Length-field widths and fixed body sizes of the 0xc4-0xdf tags, written
// out independently of the package's own table.
var (
	iopRefWidths = map[byte]int{0xc4: 1, 0xc5: 2, 0xc6: 4, 0xd9: 1, 0xda: 2, 0xdb: 4, 0xc7: 1, 0xc8: 2, 0xc9: 4,
		0xdc: 2, 0xdd: 4, 0xde: 2, 0xdf: 4}
	iopRefFixed = map[byte]uint64{0xca: 4, 0xcb: 8, 0xcc: 1, 0xcd: 2, 0xce: 4, 0xcf: 8, 0xd0: 1, 0xd1: 2, 0xd2: 4, 0xd3: 8,
		0xd4: 2, 0xd5: 3, 0xd6: 5, 0xd7: 9, 0xd8: 17}
)

// iopOracle says whether CheckMsgpack must accept b at maxDepth.
func iopOracle(b []byte, maxDepth int) bool {
	if len(b) == 0 || (len(b) >= 2 && b[0] == 'C' && b[1] == 'K') {
		return false
	}
	r, end := iopRefWalk(b)
	return !r.truncated && !r.reserved && end == len(b) && r.depth <= maxDepth && r.slots <= uint64(len(b)-1)
}

// iopAcceptCorpus gathers every accepted document the vectors hold.
func iopAcceptCorpus(t testing.TB) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, r := range vectors.DecodeBounds(t, "accept_vectors") {
		out["bounds/"+r.Name] = iopBoundsInput(t, r)
	}
	for _, r := range vectors.Group[iopReaderRow](t, "interop-mode.json", "reader_accept_vectors") {
		out["reader/"+r.Name] = vectors.Hex(t, r.MsgpackHex)
	}
	for _, r := range vectors.Group[iopValueRow](t, "interop-mode.json", "value_vectors") {
		out["value/"+r.Name] = vectors.Hex(t, r.CanonicalMsgpackHex)
	}
	for _, r := range vectors.Group[iopKeyRow](t, "interop-mode.json", "key_vectors") {
		out["key/"+r.Name] = vectors.Hex(t, r.CanonicalArgsHex)
	}
	return out
}

// iopAgree runs both entry points and the oracle on in.
func iopAgree(t testing.TB, name string, in []byte) {
	c := CheckMsgpack(in, DecodeLimits{})
	v, d := DecodeMsgpack(in, DecodeLimits{})
	if c != d {
		t.Fatalf("%s: CheckMsgpack %v, DecodeMsgpack %v", name, c, d)
	}
	if d != nil && v != nil {
		t.Fatalf("%s: DecodeMsgpack returned a value with an error", name)
	}
	if want := iopOracle(in, DefaultMaxDepth); (c == nil) != want {
		t.Fatalf("%s: CheckMsgpack %v, reference walk accepts=%v", name, c, want)
	}
}

func TestMutationsAgree(t *testing.T) {
	corpus := iopAcceptCorpus(t)
	if len(corpus) == 0 {
		t.Fatal("empty corpus")
	}
	for name, doc := range corpus {
		iopAgree(t, name, doc)
		if CheckMsgpack(doc, DecodeLimits{}) != nil {
			t.Fatalf("%s: corpus document rejected", name)
		}
		for cut := range len(doc) {
			if CheckMsgpack(doc[:cut], DecodeLimits{}) == nil {
				t.Fatalf("%s: prefix of %d bytes accepted", name, cut)
			}
			iopAgree(t, fmt.Sprintf("%s/cut%d", name, cut), doc[:cut])
		}
		if CheckMsgpack(append(slices.Clone(doc), 0), DecodeLimits{}) != errTrailing {
			t.Fatalf("%s: trailing byte accepted", name)
		}
		mut := slices.Clone(doc)
		for i := range mut {
			for bit := range 8 {
				mut[i] ^= 1 << bit
				iopAgree(t, fmt.Sprintf("%s/flip%d.%d", name, i, bit), mut)
				mut[i] ^= 1 << bit
			}
		}
	}
}
