package codec

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
	"github.com/cachekit-io/cachekit-go/protocol"
)

type tagged struct {
	Name  string `json:"name"`
	Count int    `msgpack:"n" json:"count"`
	Plain bool
}

func TestAppendKeepsDstAndWritesCompactInts(t *testing.T) {
	out, err := Append([]byte("pre"), int64(1), false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{'p', 'r', 'e', 0x01}; !bytes.Equal(out, want) {
		t.Fatalf("Append(int64(1)) = % x, want % x (prefix kept, positive fixint)", out, want)
	}
}

func TestAppendDecodeRoundTrip(t *testing.T) {
	for _, jsonTags := range []bool{false, true} {
		in := tagged{Name: "ada", Count: 42, Plain: true}
		raw, err := Append(nil, in, jsonTags)
		if err != nil {
			t.Fatal(err)
		}
		var got tagged
		if err := Decode(raw, &got, jsonTags); err != nil {
			t.Fatalf("jsonTags=%v: %v", jsonTags, err)
		}
		if got != in {
			t.Fatalf("jsonTags=%v: got %+v, want %+v", jsonTags, got, in)
		}
	}
}

// The tag mode decides the field names on the wire; a msgpack tag wins over
// a json tag in both modes.
func TestAppendFieldNames(t *testing.T) {
	for _, tc := range []struct {
		jsonTags bool
		keys     []string
	}{
		{false, []string{"Name", "n", "Plain"}},
		{true, []string{"name", "n", "Plain"}},
	} {
		raw, err := Append(nil, tagged{}, tc.jsonTags)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := Decode(raw, &m, false); err != nil {
			t.Fatal(err)
		}
		for _, k := range tc.keys {
			if _, ok := m[k]; !ok {
				t.Errorf("jsonTags=%v: no key %q in %v", tc.jsonTags, k, m)
			}
		}
		if len(m) != len(tc.keys) {
			t.Errorf("jsonTags=%v: %d keys, want %d", tc.jsonTags, len(m), len(tc.keys))
		}
	}
}

func TestDecodeRefuses(t *testing.T) {
	raw, _ := Append(nil, "text", false)
	if err := Decode(raw, nil, false); err == nil || err.Error() != "cachekit: decode: nil destination" {
		t.Fatalf("nil destination: %v", err)
	}
	for _, jsonTags := range []bool{false, true} {
		var n int
		err := Decode(raw, &n, jsonTags)
		if err == nil || !strings.HasPrefix(err.Error(), "cachekit: decode value: ") {
			t.Fatalf("jsonTags=%v: a string into an int: %v", jsonTags, err)
		}
	}
	if _, err := Append(nil, make(chan int), false); err == nil || !strings.HasPrefix(err.Error(), "cachekit: encode value: ") {
		t.Fatalf("Append(chan): %v", err)
	}
}

// TestBytesItemReadsAppend: the bytes read path (protocol.BytesItem, which
// AppendValue inlines) takes what Append writes for a []byte and for a
// string, aliasing the payload, and nothing else.
func TestBytesItemReadsAppend(t *testing.T) {
	bin, _ := Append(nil, []byte("abc"), false)
	str, _ := Append(nil, "abc", false)
	for _, p := range [][]byte{bin, str} {
		body, ok := protocol.BytesItem(p)
		if !ok || string(body) != "abc" {
			t.Fatalf("BytesItem(% x) = %q, %v", p, body, ok)
		}
		if &body[0] != &p[len(p)-3] {
			t.Fatalf("BytesItem(% x) copied its body; it must alias the payload", p)
		}
	}
	num, _ := Append(nil, 7, false)
	for _, p := range [][]byte{nil, num, append(bin[:len(bin):len(bin)], 0xc0)} {
		if body, ok := protocol.BytesItem(p); ok || body != nil {
			t.Fatalf("BytesItem(% x) = %q, %v; want nil, false", p, body, ok)
		}
	}
}

// Pooled encoders and decoders must not keep a reference to the caller's
// buffers (a dst the caller clears, a payload that is reused). The check
// reads back the item just returned to the pool; under -race sync.Pool may
// drop it, and then the check is vacuous (the non-race pass asserts it).
func TestPoolsDropCallerBuffers(t *testing.T) {
	for _, jsonTags := range []bool{false, true} {
		pool := &msgpackWriters
		if jsonTags {
			pool = &jsonTagWriters
		}
		if _, err := Append(make([]byte, 0, 64), "v", jsonTags); err != nil {
			t.Fatal(err)
		}
		mw := pool.Get().(*msgpackWriter)
		if mw.w.b != nil {
			t.Errorf("jsonTags=%v: a pooled writer kept dst", jsonTags)
		}
		pool.Put(mw)
	}
	raw, _ := Append(nil, tagged{Name: "x"}, true)
	var got tagged
	if err := Decode(raw, &got, true); err != nil {
		t.Fatal(err)
	}
	jr := jsonTagReaders.Get().(*jsonTagReader)
	if jr.r.Len() != 0 || jr.r.Size() != 0 {
		t.Errorf("a pooled json-tag reader kept the payload (%d bytes)", jr.r.Size())
	}
	jsonTagReaders.Put(jr)
}

func TestAllocsAppendIntoSizedDst(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation budgets are asserted without -race: sync.Pool drops items under it")
	}
	dst := make([]byte, 0, 256)
	var val any = bytes.Repeat([]byte{'x'}, 100) // boxed once, outside the count
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := Append(dst[:0], val, false); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Append of a []byte into a sized dst allocated %.1f times, budget 0", allocs)
	}
}

func TestDecodeTime(t *testing.T) {
	in := time.Date(2026, 12, 4, 20, 30, 0, 123, time.UTC)
	raw, err := Append(nil, in, false)
	if err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := Decode(raw, &got, false); err != nil || !got.Equal(in) {
		t.Fatalf("Decode(time) = %v, %v", got, err)
	}
}
