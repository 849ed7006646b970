package cachekit

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// pySentinel is a temporal sentinel map as cachekit-py writes one: plain
// data (a bool and a string), encoded here without any temporal type.
func pySentinel(key, text string) map[string]any { return map[string]any{key: true, "value": text} }

// pyTemporalDoc is cachekit-py's interop value {"at": time(10, 30, 0, 250),
// "created": datetime(2025, 11, 14, 10, 30, tzinfo=utc), "day": date(2025,
// 11, 14)}, and the Go values each sentinel stands for.
var pyTemporalDoc = map[string]any{
	"at":      pySentinel("__time__", "10:30:00.000250"),
	"created": pySentinel("__datetime__", "2025-11-14T10:30:00+00:00"),
	"day":     pySentinel("__date__", "2025-11-14"),
}

var pyTemporalWant = map[string]any{
	"at":      protocol.TimeOfDay{Hour: 10, Minute: 30, Nanosecond: 250000},
	"created": time.Date(2025, 11, 14, 10, 30, 0, 0, time.UTC),
	"day":     protocol.Date{Year: 2025, Month: time.November, Day: 14},
}

// temporalRecord is a Go struct of the three temporal types.
type temporalRecord struct {
	At      protocol.TimeOfDay `msgpack:"at"`
	Created time.Time          `msgpack:"created"`
	Day     protocol.Date      `msgpack:"day"`
}

// TestPythonTemporalSentinelsThroughClient: an interop value cachekit-py
// wrote with each temporal sentinel (a datetime, a date, a time of day),
// planted in Redis, plain and encrypted, reads back through InteropGet and
// MGet as the documented Go types (WIRE-20): time.Time, protocol.Date and
// protocol.TimeOfDay, never a map, into any, into a map, into a struct of
// those types, and each sentinel alone as the whole value. A Go struct of
// the three types written with InteropSet stores exactly cachekit-py's
// bytes.
func TestPythonTemporalSentinelsThroughClient(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	py, err := protocol.AppendCanonicalValue(nil, pyTemporalDoc)
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]Options{
		"plain":     {Interop: true},
		"encrypted": {Interop: true, Encryption: encConfig("")},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			c := newClient(t, opts)
			key, err := InteropKey("py", "temporal", name)
			if err != nil {
				t.Fatal(err)
			}
			plant(t, rdb, key, sealAs(t, opts, key, py))
			var anyV any
			if err := c.InteropGet(bg, "py", "temporal", []any{name}, &anyV); err != nil {
				t.Fatal(err)
			}
			wantRevived(t, "into any", anyV)
			var m map[string]any
			if err := c.Get(bg, key, &m); err != nil {
				t.Fatal(err)
			}
			wantRevived(t, "into a map", m)
			mm, err := MGet[map[string]any](bg, c, []string{key})
			if err != nil {
				t.Fatal(err)
			}
			wantRevived(t, "through MGet", mm[key])
			var rec temporalRecord
			if err := c.Get(bg, key, &rec); err != nil {
				t.Fatal(err)
			}
			if rec.At != pyTemporalWant["at"] || rec.Day != pyTemporalWant["day"] || !rec.Created.Equal(pyTemporalWant["created"].(time.Time)) {
				t.Fatalf("into a struct: %+v", rec)
			}
			for field, sentinel := range pyTemporalDoc {
				k := key + "-" + field
				alone, err := protocol.AppendCanonicalValue(nil, sentinel)
				if err != nil {
					t.Fatal(err)
				}
				plant(t, rdb, k, sealAs(t, opts, k, alone))
				var v any
				if err := c.Get(bg, k, &v); err != nil {
					t.Fatal(err)
				}
				wantRevived(t, "alone", map[string]any{field: v})
				typed := reflect.New(reflect.TypeOf(pyTemporalWant[field]))
				if err := c.Get(bg, k, typed.Interface()); err != nil {
					t.Fatalf("%s into %s: %v", field, typed.Elem().Type(), err)
				}
				wantRevived(t, "alone, typed", map[string]any{field: typed.Elem().Interface()})
			}
			if opts.Encryption != nil {
				return
			}
			want := temporalRecord{At: pyTemporalWant["at"].(protocol.TimeOfDay), Created: pyTemporalWant["created"].(time.Time),
				Day: pyTemporalWant["day"].(protocol.Date)}
			if err := c.InteropSet(bg, "go", "temporal", nil, want, time.Minute); err != nil {
				t.Fatal(err)
			}
			goKey, _ := InteropKey("go", "temporal")
			if stored, err := rdb.Get(bg, goKey).Bytes(); err != nil || !bytes.Equal(stored, py) {
				t.Fatalf("Go wrote %x, %v; want cachekit-py's bytes %x", stored, err, py)
			}
		})
	}
}

// wantRevived fails unless every field of got that pyTemporalWant names
// holds the Go value its sentinel stands for, not the map.
func wantRevived(t *testing.T, what string, got any) {
	t.Helper()
	m, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("%s: %#v, want a map of the three fields", what, got)
	}
	for field, v := range m {
		want := pyTemporalWant[field]
		if tt, isTime := v.(time.Time); isTime {
			if !tt.Equal(want.(time.Time)) {
				t.Fatalf("%s: %s = %v, want %v", what, field, tt, want)
			}
			continue
		}
		if v != want {
			t.Fatalf("%s: %s = %#v (%T), want %#v", what, field, v, v, want)
		}
	}
}

// TestAutoModeLeavesSentinelMapsAlone: in auto mode no temporal sentinel
// another SDK wrote can reach a Go reader (auto-mode containers are
// SDK-internal, WIRE-21) and a Go writer stores time.Time as msgpack's
// timestamp extension, so a map shaped like a sentinel is a map a Go user
// stored, and it reads back as that map, not revived (WIRE-20 binds
// interop mode here); a protocol.Date or protocol.TimeOfDay stored in auto
// mode still reads back into its own type.
func TestAutoModeLeavesSentinelMapsAlone(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{})
	mustSet(t, c, "shaped", pySentinel("__date__", "2025-11-14"))
	var v any
	if err := c.Get(bg, "shaped", &v); err != nil || !reflect.DeepEqual(v, pySentinel("__date__", "2025-11-14")) {
		t.Fatalf("auto mode read %#v, %v; want the map as stored", v, err)
	}
	want := temporalRecord{At: protocol.TimeOfDay{Hour: 1, Minute: 2, Second: 3, HasOffset: true, Offset: 3600},
		Created: time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC), Day: protocol.Date{Year: 2025, Month: 1, Day: 2}}
	mustSet(t, c, "record", want)
	got, err := Get[temporalRecord](bg, c, "record")
	if err != nil || got.At != want.At || got.Day != want.Day || !got.Created.Equal(want.Created) {
		t.Fatalf("auto mode round trip: %+v, %v", got, err)
	}
	if err := c.Set(bg, "bad", protocol.Date{Year: 2025, Month: 2, Day: 30}); !errors.Is(err, protocol.ErrUnsupported) {
		t.Fatalf("an invalid Date stored: %v", err)
	}
}
