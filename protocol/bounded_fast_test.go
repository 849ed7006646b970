package protocol

import (
	"bytes"
	"encoding/binary"
	"github.com/cachekit-io/cachekit-go/protocol/internal/mp"
	"testing"
)

// CheckMsgpack accepts a lone str or bin item without the walk. These tests
// hold that shortcut to the walk's verdict: it may only accept what the walk
// accepts, and CheckMsgpack's answer must equal the walk's everywhere.

// walkVerdict is CheckMsgpack without the shortcut.
func walkVerdict(b []byte, lim DecodeLimits) error {
	maxDepth, err := checkPrelude(b, lim)
	if err != nil {
		return err
	}
	return walkDocument(b, maxDepth)
}

// checkBytesShortcut asserts the property on b and reports whether the
// shortcut took it.
func checkBytesShortcut(t testing.TB, b []byte) bool {
	t.Helper()
	took := len(b) > 0 && wholeBytesItem(b)
	want := walkVerdict(b, DefaultDecodeLimits)
	if took && want != nil {
		t.Fatalf("shortcut accepted a %d-byte input the walk rejects: %v", len(b), want)
	}
	if got := CheckMsgpack(b, DefaultDecodeLimits); got != want {
		t.Fatalf("CheckMsgpack %v, walk %v (%d-byte input)", got, want, len(b))
	}
	return took
}

// bytesItems returns str and bin items of every header width at lengths
// around each width's limits.
func bytesItems() [][]byte {
	var out [][]byte
	for _, n := range []int{0, 1, 30, 31, 32, 100, 255, 256, 1000, 65535, 65536} {
		body := bytes.Repeat([]byte{'x'}, n)
		if n <= 31 {
			out = append(out, append([]byte{0xa0 | byte(n)}, body...))
		}
		for _, tags := range [][2]byte{{mp.Bin8, mp.Str8}, {mp.Bin16, mp.Str16}, {mp.Bin32, mp.Str32}} {
			for _, tag := range tags {
				var h []byte
				switch tag {
				case mp.Bin8, mp.Str8:
					if n > 0xff {
						continue
					}
					h = []byte{tag, byte(n)}
				case mp.Bin16, mp.Str16:
					if n > 0xffff {
						continue
					}
					h = binary.BigEndian.AppendUint16([]byte{tag}, uint16(n))
				default:
					h = binary.BigEndian.AppendUint32([]byte{tag}, uint32(n))
				}
				out = append(out, append(h, body...))
			}
		}
	}
	return out
}

func TestCheckMsgpackBytesShortcut(t *testing.T) {
	items := bytesItems()
	if len(items) == 0 {
		t.Fatal("no items")
	}
	took := 0
	for _, item := range items {
		if !checkBytesShortcut(t, item) {
			t.Fatalf("shortcut declined a whole %d-byte bytes item", len(item))
		}
		took++
		if len(item) > 300 {
			continue
		}
		for n := 0; n < len(item); n++ {
			checkBytesShortcut(t, item[:n:n])
		}
		for _, extra := range []byte{0x00, 0xa0, 0xc1} {
			checkBytesShortcut(t, append(bytes.Clone(item), extra))
		}
		mut := bytes.Clone(item)
		for i := range min(len(mut), 8) {
			for bit := range 8 {
				mut[i] ^= 1 << bit
				checkBytesShortcut(t, mut)
				mut[i] ^= 1 << bit
			}
		}
	}
	// Every one- and two-byte input, exhaustively.
	for a := range 256 {
		checkBytesShortcut(t, []byte{byte(a)})
		for b := range 256 {
			checkBytesShortcut(t, []byte{byte(a), byte(b)})
		}
	}
	// Lower limits still apply before the shortcut.
	if err := CheckMsgpack([]byte{0xa3, 'a', 'b', 'c'}, DecodeLimits{MaxBytes: 3}); err != errInputTooLong {
		t.Fatalf("MaxBytes not enforced before the shortcut: %v", err)
	}
	if took == 0 {
		t.Fatal("shortcut never taken")
	}
}

// FuzzCheckMsgpackShortcut checks the shortcut against the walk on
// arbitrary input, seeded from the decode-bounds and interop vectors and
// from bytes items of every width.
func FuzzCheckMsgpackShortcut(f *testing.F) {
	seeds := 0
	for _, doc := range iopAcceptCorpus(f) {
		f.Add(doc)
		seeds++
	}
	if seeds == 0 {
		f.Fatal("no seeds: the vector groups yielded nothing")
	}
	for _, item := range bytesItems() {
		if len(item) <= 1024 {
			f.Add(item)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkBytesShortcut(t, in)
	})
}
