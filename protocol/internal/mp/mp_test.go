package mp

import (
	"bytes"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestBytesHeaderAgainstWriters: every str and bin the writers produce, at
// each length-form boundary, is one bytes item with the writer's header;
// the same bytes one byte short or long, and every other tag, are not.
func TestBytesHeaderAgainstWriters(t *testing.T) {
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535, 65536} {
		body := bytes.Repeat([]byte{'x'}, n)
		for name, doc := range map[string][]byte{"bin": AppendBin(nil, body), "str": AppendStr(nil, string(body))} {
			h, ok := BytesHeader(doc)
			if !ok || !bytes.Equal(doc[h:], body) {
				t.Fatalf("%s of %d bytes: header %d, ok %v", name, n, h, ok)
			}
			if _, ok := BytesHeader(doc[:len(doc)-1]); ok && n > 0 {
				t.Fatalf("%s of %d bytes, truncated, accepted", name, n)
			}
			if _, ok := BytesHeader(append(doc[:len(doc):len(doc)], 0)); ok {
				t.Fatalf("%s of %d bytes with a trailing byte accepted", name, n)
			}
		}
	}
	for c := 0; c < 256; c++ {
		if c&0xe0 == FixStr || c == Bin8 || c == Bin16 || c == Bin32 || c == Str8 || c == Str16 || c == Str32 {
			continue
		}
		if _, ok := BytesHeader([]byte{byte(c), 0, 0, 0, 0}); ok {
			t.Fatalf("tag %#x taken for a bytes item", c)
		}
	}
	if _, ok := BytesHeader(nil); ok {
		t.Fatal("empty input taken for a bytes item")
	}
}

// TestWritersMatchTheLibrary: the writers' shortest forms decode with
// vmihailenco/msgpack to the values written, and HeaderShape describes
// every header the library writes for the 8/16/32 forms.
func TestWritersMatchTheLibrary(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 255, 256, 65535, 65536, 1 << 32, -1, -32, -33, -128, -129, -32768, -32769, -1 << 31, -1<<31 - 1} {
		var got int64
		if err := msgpack.Unmarshal(AppendInt(nil, v), &got); err != nil || got != v {
			t.Fatalf("AppendInt(%d) decodes to %d, %v", v, got, err)
		}
	}
	for _, n := range []int{0, 15, 16, 65535, 65536} {
		arr := AppendArrayHeader(nil, n)
		for range n {
			arr = AppendNil(arr)
		}
		var got []any
		if err := msgpack.Unmarshal(arr, &got); err != nil || len(got) != n {
			t.Fatalf("array of %d: %d, %v", n, len(got), err)
		}
		if arr[0] >= 0xc0 {
			w, kind := HeaderShape(arr[0])
			if kind != ShapeArray || (n <= 65535) != (w == 2) {
				t.Fatalf("HeaderShape(%#x) = %d, %d", arr[0], w, kind)
			}
		}
	}
	var f float64
	if err := msgpack.Unmarshal(AppendFloat64(nil, 1.5), &f); err != nil || f != 1.5 {
		t.Fatalf("AppendFloat64: %v, %v", f, err)
	}
	if _, kind := HeaderShape(Never); kind != ShapeReserved {
		t.Fatal("0xc1 is not reserved")
	}
}
