package protocol

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"
)

// specTemporalRows are wire-format 1.4.0's temporal_sentinel_vectors (not
// vendored: testdata/protocol/README.md), built from wire-format.md's
// Datetime Extension Format: the three maps it gives, as canonical
// MessagePack (hex written out by hand), each with the Go value a reader
// revives it as.
var specTemporalRows = []struct {
	name, payloadHex string
	revives          any
}{
	{"temporal_sentinel_datetime",
		"82ac5f5f6461746574696d655f5fc3a576616c7565b9323032352d31312d31345431303a33303a30302b30303a3030",
		time.Date(2025, 11, 14, 10, 30, 0, 0, time.UTC)},
	{"temporal_sentinel_date",
		"82a85f5f646174655f5fc3a576616c7565aa323032352d31312d3134",
		Date{Year: 2025, Month: time.November, Day: 14}},
	{"temporal_sentinel_time",
		"82a85f5f74696d655f5fc3a576616c7565a831303a33303a3030",
		TimeOfDay{Hour: 10, Minute: 30}},
}

// TestTemporalSentinelRows: each of the three temporal sentinel maps
// (wire-format 1.4.0's temporal_sentinel_vectors, built here) decodes to
// the map, revives (TemporalSentinel) as its documented Go type - a
// time.Time, a Date, a TimeOfDay - never staying a map (WIRE-20), reads
// through Date's and TimeOfDay's msgpack unmarshallers, and the Go value
// written back by the value profile is the row's bytes exactly, the map
// cachekit-py writes.
func TestTemporalSentinelRows(t *testing.T) {
	for _, row := range specTemporalRows {
		t.Run(row.name, func(t *testing.T) {
			in, err := hex.DecodeString(row.payloadHex)
			if err != nil {
				t.Fatal(err)
			}
			v, err := DecodeMsgpack(in, DecodeLimits{})
			if err != nil {
				t.Fatal(err)
			}
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("decoded %#v, want the sentinel map", v)
			}
			got, ok := TemporalSentinel(m)
			if !ok {
				t.Fatalf("TemporalSentinel(%v) did not revive it", m)
			}
			if tt, isTime := got.(time.Time); isTime {
				if !tt.Equal(row.revives.(time.Time)) {
					t.Fatalf("revived %v, want %v", tt, row.revives)
				}
			} else if got != row.revives {
				t.Fatalf("revived %#v, want %#v", got, row.revives)
			}
			switch want := row.revives.(type) {
			case Date:
				var d Date
				if err := d.UnmarshalMsgpack(in); err != nil || d != want {
					t.Fatalf("Date.UnmarshalMsgpack = %v, %v", d, err)
				}
			case TimeOfDay:
				var tod TimeOfDay
				if err := tod.UnmarshalMsgpack(in); err != nil || tod != want {
					t.Fatalf("TimeOfDay.UnmarshalMsgpack = %v, %v", tod, err)
				}
			}
			out, err := AppendCanonicalValue(nil, row.revives)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("written back as %x, %v; want %x", out, err, in)
			}
		})
	}
}

// TestTemporalSentinelForms: the texts Python's isoformat writes beyond the
// spec's three (microseconds, offsets with and without seconds, a naive
// datetime, an aware time) revive and, written back, give the same text;
// a map that is not exactly a sentinel (another marker, an extra key, a
// value that does not parse, a datetime text under __date__) is left a map.
func TestTemporalSentinelForms(t *testing.T) {
	ok := []struct {
		key, text string
		want      any
	}{
		{"__datetime__", "2025-11-14T10:30:00.123456-08:00", time.Date(2025, 11, 14, 10, 30, 0, 123456000, time.FixedZone("", -8*3600))},
		{"__date__", "0001-01-01", Date{Year: 1, Month: time.January, Day: 1}},
		{"__date__", "9999-12-31", Date{Year: 9999, Month: time.December, Day: 31}},
		{"__time__", "23:59:59.000001", TimeOfDay{Hour: 23, Minute: 59, Second: 59, Nanosecond: 1000}},
		{"__time__", "10:30:00+05:30", TimeOfDay{Hour: 10, Minute: 30, HasOffset: true, Offset: 5*3600 + 30*60}},
		{"__time__", "10:30:00-00:00:30", TimeOfDay{Hour: 10, Minute: 30, HasOffset: true, Offset: -30}},
	}
	for _, tc := range ok {
		got, revived := TemporalSentinel(map[string]any{tc.key: true, "value": tc.text})
		if !revived {
			t.Fatalf("%s %q: not revived", tc.key, tc.text)
		}
		if tt, isTime := got.(time.Time); isTime {
			if want := tc.want.(time.Time); !tt.Equal(want) || tt.Format(time.RFC3339Nano) != want.Format(time.RFC3339Nano) {
				t.Fatalf("%q revived as %v, want %v", tc.text, tt, want)
			}
		} else if got != tc.want {
			t.Fatalf("%q revived as %#v, want %#v", tc.text, got, tc.want)
		}
		out, err := AppendCanonicalValue(nil, got)
		if err != nil {
			t.Fatal(err)
		}
		back, _ := DecodeMsgpack(out, DecodeLimits{})
		if text := back.(map[string]any)["value"]; text != tc.text {
			t.Fatalf("%q written back as %q", tc.text, text)
		}
	}
	for _, m := range []map[string]any{
		{"__date__": false, "value": "2025-11-14"},
		{"__date__": 1, "value": "2025-11-14"},
		{"__date__": true, "value": "2025-11-14", "x": 1},
		{"__date__": true, "value": "2025-11-14T10:30:00"},
		{"__date__": true, "value": "2025-02-30"},
		{"__time__": true, "value": "24:00:00"},
		{"__time__": true, "value": 1030},
		{"__datetime__": true, "value": "2025-11-14"},
		{"__date__": true, "__time__": true},
	} {
		if v, revived := TemporalSentinel(m); revived {
			t.Fatalf("%v revived as %#v, want it left a map", m, v)
		}
	}
}

// TestTemporalValueChecks: a Date or TimeOfDay out of range is refused by
// the value profile and by its MarshalMsgpack (ErrUnsupported), both have
// no argument form in interop/v1 keys (ErrUnsupported), and
// UnmarshalMsgpack refuses any document other than its own sentinel.
func TestTemporalValueChecks(t *testing.T) {
	for _, v := range []any{
		Date{Year: 0, Month: 1, Day: 1}, Date{Year: 10000, Month: 1, Day: 1}, Date{Year: 2025, Month: 2, Day: 29},
		TimeOfDay{Hour: 24}, TimeOfDay{Nanosecond: 1e9}, TimeOfDay{Offset: 60}, TimeOfDay{HasOffset: true, Offset: 86400},
	} {
		if _, err := AppendCanonicalValue(nil, v); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%#v: %v, want ErrUnsupported", v, err)
		}
		m := reflect.ValueOf(v).MethodByName("MarshalMsgpack").Call(nil)
		if err, _ := m[1].Interface().(error); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("%#v.MarshalMsgpack: %v, want ErrUnsupported", v, err)
		}
	}
	for _, v := range []any{Date{Year: 2025, Month: 1, Day: 1}, TimeOfDay{Hour: 1}} {
		if _, err := InteropKey("t", "op", v); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("InteropKey(%#v): %v, want ErrUnsupported", v, err)
		}
	}
	date, _ := AppendCanonicalValue(nil, Date{Year: 2025, Month: 1, Day: 2})
	tod, _ := AppendCanonicalValue(nil, TimeOfDay{Hour: 1})
	var d Date
	var tt TimeOfDay
	for _, b := range [][]byte{tod, {0xc0}, {0x81, 0xa0, 0xc0}, {0x82}} {
		if err := d.UnmarshalMsgpack(b); err == nil {
			t.Fatalf("Date.UnmarshalMsgpack(%x) accepted", b)
		}
	}
	if err := tt.UnmarshalMsgpack(date); err == nil {
		t.Fatal("TimeOfDay.UnmarshalMsgpack accepted a date")
	}
	if DateOf(time.Date(2025, 11, 14, 23, 0, 0, 0, time.UTC)).String() != "2025-11-14" ||
		TimeOfDayOf(time.Date(1, 1, 1, 9, 5, 7, 2000, time.FixedZone("", 3600))).String() != "09:05:07.000002+01:00" {
		t.Fatal("DateOf or TimeOfDayOf")
	}
}
