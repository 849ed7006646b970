package codec

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/protocol"
)

type event struct {
	Name string    `msgpack:"name"`
	At   time.Time `msgpack:"at"`
	Tags []string  `msgpack:"tags"`
}

var when = time.Date(2026, 12, 4, 20, 30, 1, 500_000_000, time.UTC)

// A struct goes through the generic pass; its time field leaves as the
// datetime sentinel and comes back into a typed destination and into *any.
func TestInteropStructRoundTrip(t *testing.T) {
	in := event{Name: "deploy", At: when, Tags: []string{"a", "b"}}
	raw, err := AppendInterop([]byte("pre"), in, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(raw, []byte("pre")) {
		t.Fatalf("AppendInterop did not append to dst: % x", raw)
	}
	raw = raw[3:]
	if !bytes.Contains(raw, []byte("\xac__datetime__")) {
		t.Fatalf("no datetime sentinel in % x", raw)
	}
	if err := protocol.CheckMsgpack(raw, protocol.DefaultDecodeLimits); err != nil {
		t.Fatal(err)
	}
	var got event
	if err := DecodeInterop(raw, &got, false); err != nil {
		t.Fatal(err)
	}
	if got.Name != in.Name || !got.At.Equal(in.At) || !reflect.DeepEqual(got.Tags, in.Tags) {
		t.Fatalf("got %+v, want %+v", got, in)
	}
	var tree any
	if err := DecodeInterop(raw, &tree, false); err != nil {
		t.Fatal(err)
	}
	m, ok := tree.(map[string]any)
	if !ok {
		t.Fatalf("*any got %T", tree)
	}
	if at, ok := m["at"].(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("*any: at = %#v, want the revived time", m["at"])
	}
}

// A value the canonical writer takes directly is written as it is, the same
// bytes as protocol.AppendCanonicalValue.
func TestAppendInteropDirect(t *testing.T) {
	v := map[string]any{"b": int64(2), "a": "x"}
	want, err := protocol.AppendCanonicalValue(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	got, err := AppendInterop(nil, v, false)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("AppendInterop = % x, %v; want % x", got, err, want)
	}
}

// A document with a map key no Go map can hold reads only into *any.
func TestDecodeInteropMapKeyWithoutGoForm(t *testing.T) {
	doc := []byte{0x81, 0x91, 0x01, 0x01} // {[1]: 1}
	var typed map[string]int
	err := DecodeInterop(doc, &typed, false)
	if err == nil || !strings.Contains(err.Error(), "has no Go form") {
		t.Fatalf("typed destination: %v", err)
	}
	var tree any
	if err := DecodeInterop(doc, &tree, false); err != nil {
		t.Fatal(err)
	}
	if m, ok := tree.(protocol.Map); !ok || len(m) != 1 {
		t.Fatalf("*any got %#v", tree)
	}
}

func TestDecodeInteropMalformed(t *testing.T) {
	var v any
	if err := DecodeInterop([]byte{0x92, 0x01}, &v, false); err == nil {
		t.Fatal("a truncated array decoded")
	}
}

// TestSentinelTime: a datetime sentinel revives (protocol.TemporalSentinel)
// only with exactly its two keys, the marker true and a text that parses;
// a text without an offset reads as UTC.
func TestSentinelTime(t *testing.T) {
	for _, tc := range []struct {
		m    map[string]any
		want time.Time
		ok   bool
	}{
		{map[string]any{"__datetime__": true, "value": "2026-12-04T20:30:01.5Z"}, when, true},
		{map[string]any{"__datetime__": true, "value": "2026-12-04T20:30:01.5"}, when, true}, // naive: UTC
		{map[string]any{"__datetime__": false, "value": "2026-12-04T20:30:01.5Z"}, time.Time{}, false},
		{map[string]any{"__datetime__": true, "value": 7}, time.Time{}, false},
		{map[string]any{"__datetime__": true, "value": "yesterday"}, time.Time{}, false},
		{map[string]any{"__datetime__": true, "value": "2026-12-04T20:30:01.5Z", "x": 1}, time.Time{}, false},
	} {
		v, ok := protocol.TemporalSentinel(tc.m)
		got, _ := v.(time.Time)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("TemporalSentinel(%v) = %v, %v; want %v, %v", tc.m, v, ok, tc.want, tc.ok)
		}
	}
}

func TestReviveTimesNested(t *testing.T) {
	s := map[string]any{"__datetime__": true, "value": "2026-12-04T20:30:01.5Z"}
	v := reviveTimes([]any{map[string]any{"x": s}, protocol.Map{{Key: int64(1), Value: s}}})
	l := v.([]any)
	if at, ok := l[0].(map[string]any)["x"].(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("map: %#v", l[0])
	}
	if at, ok := l[1].(protocol.Map)[0].Value.(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("Map: %#v", l[1])
	}
}

func TestCanonicalTree(t *testing.T) {
	data8 := binary.BigEndian.AppendUint64(nil, uint64(when.Nanosecond())<<34|uint64(when.Unix()))
	got, err := canonicalTree(map[string]any{"at": []any{protocol.Ext{Type: -1, Data: data8}}})
	if err != nil {
		t.Fatal(err)
	}
	if at := got.(map[string]any)["at"].([]any)[0].(time.Time); !at.Equal(when) {
		t.Fatalf("at = %v, want %v", at, when)
	}
	if _, err := canonicalTree([]any{protocol.Ext{Type: 5, Data: []byte{1}}}); err == nil ||
		err.Error() != "cachekit: interop: extension type 5 has no canonical form" {
		t.Fatalf("ext 5: %v", err)
	}
}

func TestTimestampExt(t *testing.T) {
	d4 := binary.BigEndian.AppendUint32(nil, uint32(when.Unix()))
	d8 := binary.BigEndian.AppendUint64(nil, uint64(when.Nanosecond())<<34|uint64(when.Unix()))
	d12 := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, uint32(when.Nanosecond())), uint64(when.Unix()))
	for _, tc := range []struct {
		data []byte
		want time.Time
	}{{d4, when.Truncate(time.Second)}, {d8, when}, {d12, when}} {
		got, err := timestampExt(tc.data)
		if err != nil || !got.Equal(tc.want) || got.Location() != time.UTC {
			t.Errorf("timestampExt(% x) = %v, %v; want %v UTC", tc.data, got, err, tc.want)
		}
	}
	for _, n := range []int{0, 1, 5, 9, 13} {
		if _, err := timestampExt(make([]byte, n)); err == nil {
			t.Errorf("timestampExt of %d bytes: no error", n)
		}
	}
}

// appendExt picks the ext 8/16/32 form by length, type byte after the size.
func TestAppendExtForms(t *testing.T) {
	for _, tc := range []struct {
		n    int
		head []byte
	}{
		{0, []byte{0xc7, 0x00, 0x05}},
		{0xff, []byte{0xc7, 0xff, 0x05}},
		{0x100, []byte{0xc8, 0x01, 0x00, 0x05}},
		{0xffff, []byte{0xc8, 0xff, 0xff, 0x05}},
		{0x10000, []byte{0xc9, 0x00, 0x01, 0x00, 0x00, 0x05}},
	} {
		out := appendExt(nil, protocol.Ext{Type: 5, Data: make([]byte, tc.n)})
		if !bytes.HasPrefix(out, tc.head) || len(out) != len(tc.head)+tc.n {
			t.Errorf("n=%d: header % x, length %d", tc.n, out[:len(tc.head)], len(out))
		}
	}
}

// goTree hands an ext to the Go encoder as its raw encoding, and a Map with
// Go-able keys as map[any]any.
func TestGoTree(t *testing.T) {
	x := protocol.Ext{Type: 5, Data: []byte{1, 2}}
	got, err := goTree([]any{x, protocol.Map{{Key: int64(1), Value: "v"}}})
	if err != nil {
		t.Fatal(err)
	}
	l := got.([]any)
	if raw, ok := l[0].(msgpack.RawMessage); !ok || !bytes.Equal(raw, appendExt(nil, x)) {
		t.Fatalf("ext: %#v", l[0])
	}
	if m, ok := l[1].(map[any]any); !ok || m[int64(1)] != "v" {
		t.Fatalf("Map: %#v", l[1])
	}
	for _, key := range []any{[]byte("k"), []any{}, map[string]any{}, protocol.Map{}, x} {
		if _, err := goTree(map[string]any{"m": protocol.Map{{Key: key, Value: 1}}}); err == nil {
			t.Errorf("a %T map key: no error", key)
		}
	}
}
