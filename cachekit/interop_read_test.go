package cachekit

import (
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

type readerRow struct {
	Name       string `json:"name"`
	MsgpackHex string `json:"msgpack_hex"`
}

// TestInteropReaderVectorsThroughClient: a Client in interop mode reads
// every document the protocol says a reader MUST accept (padded widths,
// unsorted keys, float32, a non-string map key, an ext type) through Get,
// and refuses every one it MUST reject, with an *EntryError.
// A reader accepts any well-formed document (IOP-18) and exactly one
// (IOP-19), and a mismatch hard-fails (ENC-3).
func TestInteropReaderVectorsThroughClient(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{Interop: true})
	accept := vectors.Group[readerRow](t, "interop-mode.json", "reader_accept_vectors")
	reject := vectors.Group[readerRow](t, "interop-mode.json", "reader_reject_vectors")
	if len(accept) == 0 || len(reject) == 0 {
		t.Fatal("no reader vectors")
	}
	for _, group := range []struct {
		rows []readerRow
		ok   bool
	}{{accept, true}, {reject, false}} {
		for _, r := range group.rows {
			t.Run(r.Name, func(t *testing.T) {
				key, err := InteropKey("vectors", "read", r.Name)
				if err != nil {
					t.Fatal(err)
				}
				if err := rdb.Set(bg, key, vectors.Hex(t, r.MsgpackHex), time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
				var v any
				err = c.Get(bg, key, &v)
				var ee *EntryError
				switch {
				case group.ok && err != nil:
					t.Fatalf("a reader must accept it: %v", err)
				case !group.ok && !errors.As(err, &ee):
					t.Fatalf("a reader must reject it: got %v, %v", v, err)
				}
			})
		}
	}
}

// TestInteropTimes: a time.Time, alone or as a struct field, is written in
// interop mode as the protocol's datetime sentinel and reads back as the
// same instant (at microsecond precision), into time.Time and into any.
func TestInteropTimes(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{Interop: true})
	type event struct {
		Name string    `msgpack:"name"`
		At   time.Time `msgpack:"at"`
	}
	when := time.Date(2026, 12, 3, 14, 5, 6, 123456789, time.UTC)
	want := when.Truncate(time.Microsecond)
	if err := c.InteropSet(bg, "t", "time", nil, when, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got time.Time
	if err := c.InteropGet(bg, "t", "time", nil, &got); err != nil || !got.Equal(want) {
		t.Fatalf("time.Time round trip = %v, %v; want %v", got, err, want)
	}
	var anyV any
	if err := c.InteropGet(bg, "t", "time", nil, &anyV); err != nil {
		t.Fatal(err)
	} else if tv, ok := anyV.(time.Time); !ok || !tv.Equal(want) {
		t.Fatalf("into any: %#v, want a time.Time %v", anyV, want)
	}
	if err := c.InteropSet(bg, "t", "event", nil, event{Name: "deploy", At: when}, time.Minute); err != nil {
		t.Fatalf("a struct with a time.Time field cannot be written: %v", err)
	}
	var ev event
	if err := c.InteropGet(bg, "t", "event", nil, &ev); err != nil || ev.Name != "deploy" || !ev.At.Equal(want) {
		t.Fatalf("struct round trip = %+v, %v; want at %v", ev, err, want)
	}
}

// TestInteropTimesInGenericDestinations: a datetime sentinel revives into
// time.Time whatever holds it: a map, a slice, an any field of a struct.
func TestInteropTimesInGenericDestinations(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{Interop: true})
	when := time.Date(2026, 12, 3, 14, 5, 6, 0, time.UTC)
	if err := c.InteropSet(bg, "t", "m", nil, map[string]any{"at": when, "list": []any{when}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := c.InteropGet(bg, "t", "m", nil, &m); err != nil {
		t.Fatal(err)
	}
	if at, ok := m["at"].(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("map value: %#v, want time.Time", m["at"])
	}
	if l, ok := m["list"].([]any); !ok || len(l) != 1 {
		t.Fatalf("list: %#v", m["list"])
	} else if at, ok := l[0].(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("slice element: %#v, want time.Time", l[0])
	}
	var s struct {
		At any `msgpack:"at"`
	}
	if err := c.InteropGet(bg, "t", "m", nil, &s); err != nil {
		t.Fatal(err)
	}
	if at, ok := s.At.(time.Time); !ok || !at.Equal(when) {
		t.Fatalf("any field: %#v, want time.Time", s.At)
	}
}
