package cachekit

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// The protocol's decode-bounds conformance (IOP-24, IOP-31): every reject
// vector planted in a real Redis and read through every untrusted entry
// point of the Client, asserting the structural guard's own error below
// the miss the read returns.

// readerConfs are the Go readers a stored entry can meet: each container
// (the envelope, plain msgpack, interop), plain and encrypted.
var readerConfs = []struct {
	name string
	opts Options
}{
	{"envelope", Options{}},
	{"plain", Options{DisableCompression: true}},
	{"interop", Options{Interop: true}},
	{"encrypted/envelope", Options{Encryption: encConfig("")}},
	{"encrypted/plain", Options{DisableCompression: true, Encryption: encConfig("")}},
	{"encrypted/interop", Options{Interop: true, Encryption: encConfig("")}},
}

// storedFor returns payload as a Client with opts stores it under
// storedKey: in the ByteStorage envelope with compression on (a payload
// reject vector of wire-format 1.4.0's kind when payload is refused), then
// sealed when encryption is on.
func storedFor(t *testing.T, opts Options, storedKey string, payload []byte) []byte {
	t.Helper()
	if !opts.DisableCompression && !opts.Interop {
		env, err := protocol.SealEnvelope(nil, payload, protocol.FormatMsgpack)
		if err != nil {
			t.Fatal(err)
		}
		payload = env
	}
	return sealAs(t, opts, storedKey, payload)
}

// openFailures records what the Client's openFailedHook sees.
type openFailures struct {
	mu   sync.Mutex
	errs []error
}

func (o *openFailures) hook(_ Tier, err error) {
	o.mu.Lock()
	o.errs = append(o.errs, err)
	o.mu.Unlock()
}

// take returns and forgets what was recorded.
func (o *openFailures) take() []error {
	o.mu.Lock()
	defer o.mu.Unlock()
	errs := o.errs
	o.errs = nil
	return errs
}

// wantGuardMiss fails unless err is a miss (IOP-24: an Unopenable
// *EntryError matching ErrNotFound, never FailOpen's *MissError) whose
// cause is guard, the structural guard's own error.
func wantGuardMiss(t *testing.T, what string, err, guard error) {
	t.Helper()
	var ee *EntryError
	var me *MissError
	switch {
	case !errors.Is(err, ErrNotFound):
		t.Fatalf("%s: %v, want a miss (ErrNotFound)", what, err)
	case !errors.As(err, &ee) || !ee.Unopenable || ee.Tier != TierL2:
		t.Fatalf("%s: %v, want an unopenable L2 *EntryError", what, err)
	case errors.As(err, &me):
		t.Fatalf("%s: %v is a *MissError: FailOpen has no part in an entry", what, err)
	case !errors.Is(err, guard):
		t.Fatalf("%s: %v, want the structural guard's own error %q below the miss", what, err, guard)
	}
}

// TestRejectVectorsThroughEveryReadPath plants every decode-bounds.json
// reject vector and interop-mode.json's reader reject vector in a real
// Redis, as each Go reader stores an entry (in the envelope, as plain
// msgpack, as an interop value; plain and encrypted), and reads it through
// every untrusted entry point: Get, GetBytes, Raw.AppendPayload, MGet,
// InteropGet (interop mode), Raw.Open and Raw.OpenStored, GetOrLoad and
// MGetOrLoad. Below the miss every read returns (IOP-24: an unopenable
// *EntryError matching ErrNotFound, never a value, never a panic, never
// FailOpen's *MissError, counted in Stats) it asserts the structural
// guard's own error (IOP-31), the very value protocol.CheckMsgpack returns
// for the payload at the Client's bounds (IOP-33), and no size cap comes
// first (IOP-32); the loading reads run their loader and return its value
// (the guard's error seen through the Client's open-failure hook). With
// compression on the payloads ride in valid envelopes, wire-format 1.4.0's
// payload_reject_vectors built here (WIRE-8, WIRE-9).
func TestRejectVectorsThroughEveryReadPath(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	payloads := vectors.RejectPayloads(t)
	for _, conf := range readerConfs {
		opts := conf.opts
		opts.Redis = rdb
		opts.Reliability = &Reliability{FailOpen: true}
		c := newClient(t, opts)
		var seen openFailures
		c.openFailedHook = seen.hook
		for _, p := range payloads {
			t.Run(conf.name+"/"+p.Name, func(t *testing.T) {
				guard := protocol.CheckMsgpack(p.Bytes, c.limits)
				var fe *protocol.FormatError
				if !errors.As(guard, &fe) || fe.Op != "msgpack" || len(p.Bytes) > c.maxValue {
					t.Fatalf("the guard's verdict on the vector is %v, want a structural rejection within MaxValueBytes", guard)
				}
				args := []any{conf.name, p.Name}
				key, err := InteropKey("conformance", "reject", args...)
				if err != nil {
					t.Fatal(err)
				}
				stored := storedFor(t, opts, key, p.Bytes)
				plant(t, rdb, key, stored)
				before, reads := c.Stats().L2OpenFailures, uint64(4)
				var v any
				err = c.Get(bg, key, &v)
				wantGuardMiss(t, "Get", err, guard)
				if v != nil {
					t.Fatalf("Get returned a value: %#v", v)
				}
				if conf.opts.Interop {
					reads++
					wantGuardMiss(t, "InteropGet", c.InteropGet(bg, "conformance", "reject", args, &v), guard)
				}
				_, err = c.GetBytes(bg, key)
				wantGuardMiss(t, "GetBytes", err, guard)
				_, err = c.Raw().AppendPayload(bg, nil, key)
				wantGuardMiss(t, "Raw.AppendPayload", err, guard)
				m, err := MGet[any](bg, c, []string{key})
				wantGuardMiss(t, "MGet", err, guard)
				if len(m) != 0 {
					t.Fatalf("MGet returned %#v", m)
				}
				if got := c.Stats().L2OpenFailures - before; got != reads {
					t.Fatalf("%d open failures counted, want %d: one per read", got, reads)
				}
				for name, open := range map[string]func() (OpenedEntry, error){
					"Raw.Open":       func() (OpenedEntry, error) { return c.Raw().Open(bg, key, stored) },
					"Raw.OpenStored": func() (OpenedEntry, error) { return c.Raw().OpenStored(bg, c.Raw().StoredKey(key), stored) },
				} {
					if _, err := open(); !errors.Is(err, guard) {
						t.Fatalf("%s: %v, want the structural guard's own error", name, err)
					}
				}
				seen.take()
				loads := 0
				got, err := GetOrLoad(bg, c, key, func(context.Context) (string, error) { loads++; return "reloaded", nil })
				if err != nil || got != "reloaded" || loads != 1 {
					t.Fatalf("GetOrLoad = %q, %v after %d loads; want the loader's value", got, err, loads)
				}
				wantSeen(t, "GetOrLoad", seen.take(), guard)
				plant(t, rdb, key, stored)
				mm, err := MGetOrLoad(bg, c, []string{key}, func(_ context.Context, missing []string) (map[string]string, error) {
					return map[string]string{missing[0]: "reloaded"}, nil
				})
				if err != nil || mm[key] != "reloaded" {
					t.Fatalf("MGetOrLoad = %#v, %v; want the loader's value", mm, err)
				}
				wantSeen(t, "MGetOrLoad", seen.take(), guard)
			})
		}
	}
}

// wantSeen fails unless the open failures a loading read met include the
// structural guard's own error (and nothing else).
func wantSeen(t *testing.T, what string, errs []error, guard error) {
	t.Helper()
	if len(errs) == 0 {
		t.Fatalf("%s met no open failure", what)
	}
	for _, err := range errs {
		if !errors.Is(err, guard) {
			t.Fatalf("%s: open failed with %v, want the structural guard's own error", what, err)
		}
	}
}

// TestEnvelopeRejectVectorsThroughClient drives every wire-format.json
// reject vector through the envelope read path of a Client with compression
// on, plain and encrypted, planted in Redis (WIRE-16): below the miss a Get
// and an MGet return (IOP-24) is the envelope reader's own error for the
// row (the same sentinel and reason protocol.OpenEnvelopeMax gives at the
// Client's MaxValueBytes), never a value.
// The Retrieve Flow's checks run in order on the Client's own read path
// (WIRE-5).
func TestEnvelopeRejectVectorsThroughClient(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	rows := vectors.Group[struct {
		Name        string `json:"name"`
		EnvelopeHex string `json:"envelope_hex"`
	}](t, "wire-format.json", "reject_vectors")
	for _, opts := range []Options{{}, {Encryption: encConfig("")}} {
		opts.Redis = rdb
		c := newClient(t, opts)
		for _, row := range rows {
			name := map[bool]string{false: "plain/", true: "encrypted/"}[opts.Encryption != nil] + row.Name
			t.Run(name, func(t *testing.T) {
				env := vectors.Hex(t, row.EnvelopeHex)
				_, want := protocol.OpenEnvelopeMax(nil, env, c.maxValue)
				var wfe *protocol.FormatError
				if !errors.As(want, &wfe) {
					t.Fatalf("the envelope reader accepts the row: %v", want)
				}
				plant(t, rdb, name, sealAs(t, opts, name, env))
				var v any
				gerr := c.Get(bg, name, &v)
				_, merr := MGet[any](bg, c, []string{name})
				for what, err := range map[string]error{"Get": gerr, "MGet": merr} {
					var fe *protocol.FormatError
					var ee *EntryError
					if !errors.Is(err, ErrNotFound) || !errors.As(err, &ee) || !ee.Unopenable || v != nil {
						t.Fatalf("%s = %#v, %v; want a miss", what, v, err)
					}
					if !errors.As(err, &fe) || fe.Op != wfe.Op || fe.Reason != wfe.Reason || !errors.Is(err, wfe.Err) {
						t.Fatalf("%s: %v, want the envelope reader's own error %q", what, err, want)
					}
				}
			})
		}
	}
}

// TestUnopenableEntryIsAMiss is the rule for entries that cannot be opened
// (IOP-24), on a FailOpen Client with L1: an entry that does not
// authenticate (a bit flipped) and one whose envelope is damaged each read,
// through Get, as an *EntryError that matches ErrNotFound, keeps its cause
// (ErrAuthFailed, a *FormatError), is counted in Stats and is never a
// *MissError or counted as degraded; MGet leaves the key out and reports
// it the same way; GetOrLoad and MGetOrLoad load a replacement. An entry
// that opens but does not decode into the destination is not a miss.
func TestUnopenableEntryIsAMiss(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	for name, opts := range map[string]Options{
		"encrypted": {Encryption: encConfig(""), L1MaxBytes: 1 << 20},
		"plain":     {L1MaxBytes: 1 << 20},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			opts.KeyPrefix = name + ":"
			opts.Reliability = &Reliability{FailOpen: true}
			c := newClient(t, opts)
			mustSet(t, c, "k", "value")
			damage(t, rdb, name+":k")
			c.DeleteLocal("k")
			var v string
			err := c.Get(bg, "k", &v)
			var ee *EntryError
			var me *MissError
			cause := map[string]error{"encrypted": ErrAuthFailed, "plain": protocol.ErrChecksum}[name]
			if !errors.Is(err, ErrNotFound) || !errors.As(err, &ee) || !ee.Unopenable || !errors.Is(err, cause) || errors.As(err, &me) {
				t.Fatalf("Get = %q, %v; want an unopenable *EntryError matching ErrNotFound and %v", v, err, cause)
			}
			if c.Stats().L2OpenFailures != 1 || c.ReliabilityStats().Degraded != 0 {
				t.Fatalf("L2OpenFailures %d, Degraded %d; want 1 and 0", c.Stats().L2OpenFailures, c.ReliabilityStats().Degraded)
			}
			m, err := MGet[string](bg, c, []string{"k"})
			if len(m) != 0 || !errors.Is(err, ErrNotFound) || !errors.Is(err, cause) || errors.As(err, &me) {
				t.Fatalf("MGet = %#v, %v; want the key left out as a miss", m, err)
			}
			loads := 0
			got, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { loads++; return "fresh", nil })
			if err != nil || got != "fresh" || loads != 1 {
				t.Fatalf("GetOrLoad = %q, %v after %d loads; want a reload", got, err, loads)
			}
			mustSet(t, c, "m", "value")
			damage(t, rdb, name+":m")
			c.DeleteLocal("m")
			mm, err := MGetOrLoad(bg, c, []string{"m"}, func(_ context.Context, missing []string) (map[string]string, error) {
				loads++
				return map[string]string{"m": "fresh"}, nil
			})
			if err != nil || mm["m"] != "fresh" || loads != 2 {
				t.Fatalf("MGetOrLoad = %#v, %v after %d loads; want a reload", mm, err, loads)
			}
			// A sound entry that is not the caller's type is no miss.
			mustSet(t, c, "typed", "a string")
			var n int
			if err := c.Get(bg, "typed", &n); !errors.As(err, &ee) || ee.Unopenable || errors.Is(err, ErrNotFound) {
				t.Fatalf("Get into the wrong type = %v, want an *EntryError that is not a miss", err)
			}
		})
	}
}

// damage spoils the entry Redis holds under key: a bit flipped in the
// middle of a sealed entry, or, for an unencrypted one, wire-format.json's
// reject_checksum_mismatch envelope in its place.
func damage(t *testing.T, rdb redis.UniversalClient, key string) {
	t.Helper()
	b, err := rdb.Get(bg, key).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if _, perr := protocol.ParseEnvelope(b); perr != nil { // sealed
		b[len(b)/2] ^= 0x10
		plant(t, rdb, key, b)
		return
	}
	for _, row := range vectors.Group[struct {
		Name        string `json:"name"`
		EnvelopeHex string `json:"envelope_hex"`
	}](t, "wire-format.json", "reject_vectors") {
		if row.Name == "reject_checksum_mismatch" {
			plant(t, rdb, key, vectors.Hex(t, row.EnvelopeHex))
			return
		}
	}
	t.Fatal("wire-format.json has no reject_checksum_mismatch row")
}

// TestAcceptVectorsThroughEveryReadPath: every decode-bounds.json accept
// vector (two documents 32 levels deep, the protocol's floor, and an
// array16 of 256 nils backed byte for byte), planted in Redis as each Go
// reader stores an entry, reads through Get and MGet as the document it is
// (IOP-34, IOP-25): the Client's bounds refuse none of them.
func TestAcceptVectorsThroughEveryReadPath(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	payloads := vectors.DecodeBounds(t, "accept_vectors")
	for _, conf := range readerConfs {
		opts := conf.opts
		opts.Redis = rdb
		c := newClient(t, opts)
		for _, p := range payloads {
			t.Run(conf.name+"/"+p.Name, func(t *testing.T) {
				want, err := protocol.DecodeMsgpack(p.Input, protocol.DefaultDecodeLimits)
				if err != nil {
					t.Fatal(err)
				}
				key, err := InteropKey("conformance", "accept", conf.name, p.Name)
				if err != nil {
					t.Fatal(err)
				}
				plant(t, rdb, key, storedFor(t, opts, key, p.Input))
				var v any
				if err := c.Get(bg, key, &v); err != nil || !equalDoc(v, want) {
					t.Fatalf("Get = %#v, %v; want the document", v, err)
				}
				m, err := MGet[any](bg, c, []string{key})
				if err != nil || !equalDoc(m[key], want) {
					t.Fatalf("MGet = %#v, %v", m, err)
				}
			})
		}
	}
}

// equalDoc compares a document read through the Client with the protocol
// decoder's by their canonical encodings (integers may come back as other
// Go integer types in auto mode).
func equalDoc(got, want any) bool {
	a, err1 := protocol.AppendCanonicalValue(nil, got)
	b, err2 := protocol.AppendCanonicalValue(nil, want)
	return err1 == nil && err2 == nil && string(a) == string(b)
}
