package cachekit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Other SDKs' auto-mode containers: a CK frame (cachekit-py) and a bare
// ByteStorage envelope (cachekit-ts's default) met by each Go reader.

// pyFrameRow is a python-frame.json row: its bytes, whatever container.
type pyFrameRow struct {
	Name     string `json:"name"`
	FrameHex string `json:"frame_hex"`
}

// pyFrameBytes returns the bytes of python-frame.json's row name.
func pyFrameBytes(t *testing.T, name string) []byte {
	t.Helper()
	for _, row := range vectors.Group[pyFrameRow](t, "python-frame.json", "error_vectors") {
		if row.Name == name {
			return vectors.Hex(t, row.FrameHex)
		}
	}
	t.Fatalf("python-frame.json has no error vector %s", name)
	return nil
}

// sealAs seals payload as a Client with opts would store it under its
// stored key (tenant from opts.Encryption, prefix included), or returns it
// as is without encryption.
func sealAs(t *testing.T, opts Options, storedKey string, payload []byte) []byte {
	t.Helper()
	if opts.Encryption == nil {
		return payload
	}
	m, err := encryption.NewManager(*opts.Encryption)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	compressed := !opts.DisableCompression && !opts.Interop
	aad, err := protocol.AppendAAD(nil, m.Tenant(), storedKey, protocol.FormatMsgpack, compressed)
	if err != nil {
		t.Fatal(err)
	}
	out, err := m.Encrypt(context.Background(), nil, payload, aad)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// plant stores b under key in Redis, as another writer would.
func plant(t *testing.T, rdb redis.UniversalClient, key string, b []byte) {
	t.Helper()
	if err := rdb.Set(bg, key, b, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestForeignEnvelopeRefusedByPlainReader: a bare ByteStorage envelope
// (python-frame.json's bare_envelope_fed_to_frame_reader: cachekit-ts's
// default container) read by a DisableCompression Client, plain and
// encrypted, with L1 and without, is refused as another SDK's auto-mode
// container (WIRE-21: never decoded as a 4-element array) by Get, MGet and
// GetOrLoad, whose loader then runs; a Client with compression on reads the
// same bytes, the container it writes itself.
func TestForeignEnvelopeRefusedByPlainReader(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	env := pyFrameBytes(t, "bare_envelope_fed_to_frame_reader")
	for name, opts := range map[string]Options{
		"plain":        {DisableCompression: true},
		"plain/L1":     {DisableCompression: true, L1MaxBytes: 1 << 20},
		"encrypted":    {DisableCompression: true, Encryption: encConfig("")},
		"encrypted/L1": {DisableCompression: true, Encryption: encConfig(""), L1MaxBytes: 1 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			c := newClient(t, opts)
			key := "foreign:" + name
			plant(t, rdb, key, sealAs(t, opts, key, env))
			var got any
			if err := c.Get(bg, key, &got); !errors.Is(err, protocol.ErrForeignContainer) || got != nil {
				t.Fatalf("Get = %#v, %v; want the envelope refused (ErrForeignContainer)", got, err)
			}
			m, err := MGet[any](bg, c, []string{key})
			if !errors.Is(err, protocol.ErrForeignContainer) || len(m) != 0 {
				t.Fatalf("MGet = %#v, %v; want the envelope refused", m, err)
			}
			loads := 0
			v, err := GetOrLoad(bg, c, key, func(context.Context) (string, error) { loads++; return "fresh", nil })
			if err != nil || v != "fresh" || loads != 1 {
				t.Fatalf("GetOrLoad = %q, %v after %d loads; want the loader's value", v, err, loads)
			}
		})
	}
	// The same bytes are the container a compressed Client writes itself.
	c := newClient(t, Options{Redis: rdb})
	plant(t, rdb, "own", env)
	var got map[string]any
	if err := c.Get(bg, "own", &got); err != nil || got["name"] != "cachekit" {
		t.Fatalf("compressed reader: %#v, %v", got, err)
	}
}

// envelopeShapedValue is a value whose plain msgpack has exactly a
// ByteStorage envelope's shape: bytes, 8 integers 0-255, a non-negative
// integer, a registry format.
var envelopeShapedValue = []any{[]byte{1, 2, 3}, []int{1, 2, 3, 4, 5, 6, 7, 8}, 3, "msgpack"}

// TestEnvelopeShapedValueRefusedAtSet is the exact-shape check's one false
// positive (WIRE-21), documented on Options.DisableCompression: a
// DisableCompression Client refuses to store a value that is exactly an
// envelope's shape, before any I/O (it could never read it back), while a
// value one element off that shape, and the same value on a Client with
// compression on or in interop mode, are stored and read back.
func TestEnvelopeShapedValueRefusedAtSet(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	plain := newClient(t, Options{Redis: rdb, DisableCompression: true, L1MaxBytes: 1 << 20})
	err := plain.Set(bg, "shaped", envelopeShapedValue)
	if !errors.Is(err, protocol.ErrForeignContainer) {
		t.Fatalf("Set of an envelope-shaped value = %v, want ErrForeignContainer", err)
	}
	if n, _ := rdb.Exists(bg, "shaped").Result(); n != 0 {
		t.Fatal("the refused value reached Redis")
	}
	for name, v := range map[string]any{
		"format json":   []any{[]byte{1, 2, 3}, []int{1, 2, 3, 4, 5, 6, 7, 8}, 3, "json"},
		"checksum of 7": []any{[]byte{1, 2, 3}, []int{1, 2, 3, 4, 5, 6, 7}, 3, "msgpack"},
		"negative size": []any{[]byte{1, 2, 3}, []int{1, 2, 3, 4, 5, 6, 7, 8}, -3, "msgpack"},
	} {
		if err := plain.Set(bg, name, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Get[[]any](bg, plain, name); err != nil {
			t.Fatalf("%s reads back: %v", name, err)
		}
	}
	compressed := newClient(t, Options{Redis: rdb})
	mustSet(t, compressed, "shaped-in-envelope", envelopeShapedValue)
	if got, err := Get[[]any](bg, compressed, "shaped-in-envelope"); err != nil || len(got) != 4 {
		t.Fatalf("compressed client: %#v, %v", got, err)
	}
	interop := newClient(t, Options{Redis: rdb, Interop: true})
	if err := interop.InteropSet(bg, "t", "shaped", nil, envelopeShapedValue, time.Minute); err != nil {
		t.Fatalf("interop Set: %v", err)
	}
	var got []any
	if err := interop.InteropGet(bg, "t", "shaped", nil, &got); err != nil || len(got) != 4 {
		t.Fatalf("interop Get: %#v, %v", got, err)
	}
}

// TestPythonFrameRowsThroughClient plants every python-frame.json row in
// Redis and reads it through Get by every Go reader: compression on and
// off and interop mode, each plain and encrypted. No reader decodes a CK
// frame (WIRE-21): a plain reader names it as cachekit-py's
// (ErrPythonFrame), the interop reader included, where 0x43 alone would be
// the document 67 (IOP-19: ck_frame_fed_to_interop_reader), and an
// encrypted reader finds no ciphertext it can authenticate. Of the other two
// containers, the bare envelope is refused by the plain-msgpack reader
// (ErrForeignContainer) and read by the envelope reader (its own
// container), and plain msgpack is refused by the envelope reader and read
// by the plain one (its own).
func TestPythonFrameRowsThroughClient(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	var rows []pyFrameRow
	for _, g := range []string{"frame_vectors", "error_vectors", "encrypted_read_vectors"} {
		rows = append(rows, vectors.Group[pyFrameRow](t, "python-frame.json", g)...)
	}
	readers := map[string]Options{
		"envelope":           {},
		"plain":              {DisableCompression: true},
		"interop":            {Interop: true},
		"encrypted/envelope": {Encryption: encConfig("")},
		"encrypted/plain":    {DisableCompression: true, Encryption: encConfig("")},
		"encrypted/interop":  {Interop: true, Encryption: encConfig("")},
	}
	for rname, opts := range readers {
		opts.Redis = rdb
		c := newClient(t, opts)
		for i, row := range rows {
			t.Run(rname+"/"+row.Name, func(t *testing.T) {
				b := vectors.Hex(t, row.FrameHex)
				key, err := InteropKey("pyframe", "row", rname, i)
				if err != nil {
					t.Fatal(err)
				}
				plant(t, rdb, key, b)
				var got any
				err = c.Get(bg, key, &got)
				ck := len(b) >= 2 && b[0] == 'C' && b[1] == 'K'
				switch {
				case ck && opts.Encryption != nil:
					if !errors.Is(err, ErrAuthFailed) || got != nil {
						t.Fatalf("Get = %#v, %v; want an authentication failure", got, err)
					}
				case ck:
					if !errors.Is(err, protocol.ErrPythonFrame) || got != nil {
						t.Fatalf("Get = %#v, %v; want ErrPythonFrame", got, err)
					}
				case opts.Encryption != nil:
					if !errors.Is(err, ErrAuthFailed) {
						t.Fatalf("Get = %#v, %v; want an authentication failure", got, err)
					}
				case row.Name == "bare_envelope_fed_to_frame_reader" && opts.DisableCompression:
					if !errors.Is(err, protocol.ErrForeignContainer) || got != nil {
						t.Fatalf("Get = %#v, %v; want ErrForeignContainer", got, err)
					}
				case row.Name == "plain_msgpack_fed_to_frame_reader" && !opts.DisableCompression && !opts.Interop:
					if err == nil || got != nil {
						t.Fatalf("envelope reader read plain msgpack: %#v", got)
					}
				default: // the reader's own container, or one plain document in interop mode
					if err != nil {
						t.Fatalf("Get: %v", err)
					}
				}
			})
		}
	}
}
