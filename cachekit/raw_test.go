package cachekit

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Raw.Delete deletes like Delete and counts, in the same round trip, the
// keys that held an entry: a lease placeholder is deleted (voiding its
// load) but not counted, a missing key counts nothing, and the L1 copy is
// gone whatever was counted.
func TestRawDelete(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]Options{
		"one round trip":     {L1MaxBytes: 1 << 20, KeyPrefix: "app:"},
		"with invalidation":  {L1MaxBytes: 1 << 20, KeyPrefix: "app:", Invalidation: &Invalidation{}},
		"encrypted, no L1":   {KeyPrefix: "app:", Encryption: encConfig("")},
		"encrypted, with L1": {L1MaxBytes: 1 << 20, Encryption: encConfig("t")},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, rdb := withRedis(t)
			o.Redis = rdb
			c := newClient(t, o)
			for _, k := range []string{"a", "b"} {
				if err := c.Set(bg, k, "v"); err != nil {
					t.Fatal(err)
				}
				var v string
				if err := c.Get(bg, k, &v); err != nil { // in L1, when there is one
					t.Fatal(err)
				}
			}
			lease := l2.LeaseMagic + strings.Repeat("0", l2.LeaseLen-len(l2.LeaseMagic))
			if err := rdb.Set(bg, o.KeyPrefix+"leased", lease, 0).Err(); err != nil {
				t.Fatal(err)
			}
			for _, step := range []struct {
				keys []string
				want int64
			}{
				{[]string{"a"}, 1},
				{[]string{"a"}, 0},
				{[]string{"missing"}, 0},
				{[]string{"leased"}, 0},
				{[]string{"b", "missing", "a"}, 1},
			} {
				n, err := c.Raw().Delete(bg, step.keys...)
				if err != nil || n != step.want {
					t.Fatalf("Raw.Delete(%q) = %d, %v; want %d", step.keys, n, err, step.want)
				}
			}
			if n := rdb.Exists(bg, o.KeyPrefix+"a", o.KeyPrefix+"b", o.KeyPrefix+"leased").Val(); n != 0 {
				t.Fatalf("%d keys left in Redis", n)
			}
			for _, k := range []string{"a", "b"} {
				var v string
				if err := c.Get(bg, k, &v); !errors.Is(err, ErrNotFound) {
					t.Fatalf("Get(%q) after Raw.Delete = %q, %v", k, v, err)
				}
			}
			_ = c.Close()
			if _, err := c.Raw().Delete(bg, "a"); !errors.Is(err, ErrClosed) {
				t.Fatalf("after Close: %v", err)
			}
		})
	}
}

// Raw.AppendPayload reads through Get's path and hands over the checked
// msgpack document Raw.Open finds in the stored bytes, appended to dst.
func TestRawAppendPayload(t *testing.T) {
	t.Parallel()
	for name, o := range modes() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, rdb := withRedis(t)
			o.Redis = rdb
			c := newClient(t, o)
			if err := c.Set(bg, "k", map[string]any{"id": uint64(1) << 63, "name": "Ada"}); err != nil {
				t.Fatal(err)
			}
			got, err := c.Raw().AppendPayload(bg, []byte("dst:"), "k")
			if err != nil {
				t.Fatal(err)
			}
			stored, err := c.Raw().Get(bg, "k")
			if err != nil {
				t.Fatal(err)
			}
			op, err := c.Raw().Open(bg, "k", stored)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, append([]byte("dst:"), op.Payload...)) {
				t.Fatalf("AppendPayload = %x, want dst: + %x", got, op.Payload)
			}
			if _, err := protocol.DecodeMsgpack(op.Payload, protocol.DefaultDecodeLimits); err != nil {
				t.Fatalf("payload is not msgpack: %v", err)
			}
			if _, err := c.Raw().AppendPayload(bg, nil, "missing"); !errors.Is(err, ErrNotFound) {
				t.Fatalf("missing: %v", err)
			}
		})
	}
}

// Raw.Open runs the Client's open and says how far it got: the keyring
// entry that authenticated (and its fingerprint), the container, the
// payload; a refusal at each step leaves the later fields nil.
func TestRawOpen(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	oldKey, otherKey, curKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32), bytes.Repeat([]byte{3}, 32)
	keys := func(cur []byte, prev ...[]byte) *encryption.Config {
		cfg := &encryption.Config{MasterKey: append([]byte(nil), cur...), Tenant: "acme"}
		for _, p := range prev {
			cfg.PreviousKeys = append(cfg.PreviousKeys, append([]byte(nil), p...))
		}
		return cfg
	}
	writer := newClient(t, Options{Redis: rdb, KeyPrefix: "p:", Encryption: keys(oldKey)})
	reader := newClient(t, Options{Redis: rdb, KeyPrefix: "p:", Encryption: keys(curKey, otherKey, oldKey)})
	if err := writer.Set(bg, "k", "value"); err != nil {
		t.Fatal(err)
	}
	stored, err := reader.Raw().Get(bg, "k")
	if err != nil {
		t.Fatal(err)
	}
	op, err := reader.Raw().Open(bg, "k", stored)
	if err != nil {
		t.Fatal(err)
	}
	fp, _ := encryption.Fingerprint(oldKey, "acme")
	if op.KeyIndex != 2 || op.KeyFingerprint != hex.EncodeToString(fp[:]) {
		t.Fatalf("KeyIndex %d, KeyFingerprint %s; want 2, %x", op.KeyIndex, op.KeyFingerprint, fp)
	}
	if _, err := protocol.ParseEnvelope(op.Container); err != nil {
		t.Fatalf("Container is not the envelope: %v", err)
	}
	if want := []byte("\xa5value"); !bytes.Equal(op.Payload, want) {
		t.Fatalf("Payload %x, want %x", op.Payload, want)
	}
	// The AAD binds the full key: the same bytes under another key do not
	// authenticate, nor do flipped bytes.
	if op, err := reader.Raw().Open(bg, "other", stored); !errors.Is(err, ErrAuthFailed) || op.KeyIndex != -1 || op.Container != nil {
		t.Fatalf("under another key: %+v, %v", op, err)
	}
	flipped := append([]byte(nil), stored...)
	flipped[len(flipped)-1] ^= 1
	if op, err := reader.Raw().Open(bg, "k", flipped); !errors.Is(err, ErrAuthFailed) || op.Container != nil || op.Payload != nil {
		t.Fatalf("flipped: %+v, %v", op, err)
	}
	var le *encryption.LengthError
	if _, err := reader.Raw().Open(bg, "k", stored[:encryption.Overhead-1]); !errors.Is(err, ErrAuthFailed) || !errors.As(err, &le) {
		t.Fatalf("short: %v", err)
	}

	// Plaintext: the envelope's checksum, then the payload's check.
	plain := newClient(t, Options{Redis: rdb})
	env, err := protocol.SealEnvelope(nil, []byte("\xa5value"), protocol.FormatMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	// fixarray(4), bin8 header, compressed_data, then the checksum as an
	// array of 8 ints: flip the first one's low bit.
	bad := append([]byte(nil), env...)
	if bad[0] != 0x94 || bad[1] != 0xc4 || bad[3+int(bad[2])] != 0x98 {
		t.Fatalf("unexpected envelope layout % x", bad)
	}
	if off := 3 + int(bad[2]); bad[off+1] == 0xcc {
		bad[off+2] ^= 1
	} else {
		bad[off+1] ^= 1
	}
	op, err = plain.Raw().Open(bg, "k", bad)
	if !errors.Is(err, protocol.ErrChecksum) || op.KeyIndex != -1 || !bytes.Equal(op.Container, bad) || op.Payload != nil {
		t.Fatalf("bad checksum: %+v, %v", op, err)
	}
	raw := newClient(t, Options{Redis: rdb, DisableCompression: true})
	op, err = raw.Raw().Open(bg, "k", []byte{0xc1})
	if err == nil || !bytes.Equal(op.Payload, []byte{0xc1}) {
		t.Fatalf("not msgpack: %+v, %v", op, err)
	}
	_ = raw.Close()
	if _, err := raw.Raw().Open(bg, "k", []byte{0xc0}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}
