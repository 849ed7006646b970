package cachekit

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// TestEveryWritePathSeals: with encryption configured, every write path of
// the Client stores ciphertext (PRE-31, PRE-32): Set, SetWithTTL, MSet,
// MSetWithTTL, SetIfAbsent, SetIfPresent, GetOrLoad's and MGetOrLoad's
// stores, and InteropSet on an interop Client. Each entry Redis holds
// carries no plaintext, opens with the keyring under the AAD of tenant,
// full key, "msgpack" and the container's compressed flag (ENC-10), and L1
// holds exactly those sealed bytes, never the value (PRE-10, PRE-11).
// Each entry is sealed under the registry token msgpack (ENC-5).
func TestEveryWritePathSeals(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	const marker = "plaintext-marker-7a3f"
	m, err := encryption.NewManager(*encConfig("acme"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	for name, opts := range map[string]Options{
		"envelope": {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, KeyPrefix: "env:"},
		"plain":    {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, KeyPrefix: "plain:", DisableCompression: true},
		"interop":  {Encryption: encConfig("acme"), L1MaxBytes: 1 << 20, Interop: true},
	} {
		t.Run(name, func(t *testing.T) {
			opts.Redis = rdb
			c := newClient(t, opts)
			key := func(op string) string {
				k, err := InteropKey("seal", op, name)
				if err != nil {
					t.Fatal(err)
				}
				return k
			}
			type write struct {
				what, op string
				fn       func(k string) error
			}
			writes := []write{
				{"Set", "set", func(k string) error { return c.Set(bg, k, marker) }},
				{"SetWithTTL", "setttl", func(k string) error { return c.SetWithTTL(bg, k, marker, time.Minute) }},
				{"MSet", "mset", func(k string) error { return c.MSet(bg, map[string]any{k: marker}) }},
				{"MSetWithTTL", "msetttl", func(k string) error { return c.MSetWithTTL(bg, map[string]any{k: marker}, time.Minute) }},
				{"SetIfAbsent", "nx", func(k string) error { _, err := c.SetIfAbsent(bg, k, marker, time.Minute); return err }},
				{"SetIfPresent", "xx", func(k string) error {
					if err := c.Set(bg, k, "before"); err != nil {
						return err
					}
					_, err := c.SetIfPresent(bg, k, marker, time.Minute)
					return err
				}},
				{"GetOrLoad", "load", func(k string) error {
					_, err := GetOrLoad(bg, c, k, func(context.Context) (string, error) { return marker, nil })
					return err
				}},
				{"MGetOrLoad", "mload", func(k string) error {
					_, err := MGetOrLoad(bg, c, []string{k}, func(_ context.Context, missing []string) (map[string]string, error) {
						return map[string]string{missing[0]: marker}, nil
					})
					return err
				}},
			}
			if opts.Interop {
				writes = append(writes, write{"InteropSet", "interopset", func(string) error {
					return c.InteropSet(bg, "seal", "interopset", []any{name}, marker, time.Minute)
				}})
			}
			compressed := !opts.DisableCompression && !opts.Interop
			for _, w := range writes {
				what, k := w.what, key(w.op)
				if err := w.fn(k); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				full := opts.KeyPrefix + k
				stored, err := rdb.Get(bg, full).Bytes()
				if err != nil {
					t.Fatalf("%s: nothing stored under its key: %v", what, err)
				}
				if bytes.Contains(stored, []byte(marker)) {
					t.Fatalf("%s stored plaintext", what)
				}
				aad, _ := protocol.AppendAAD(nil, "acme", full, protocol.FormatMsgpack, compressed)
				if _, err := m.Decrypt(bg, nil, stored, aad); err != nil {
					t.Fatalf("%s: the stored entry does not open under its AAD: %v", what, err)
				}
				if held, ok := c.l1.Get(k); ok && !bytes.Equal(held, stored) {
					t.Fatalf("%s: L1 holds other bytes than the sealed entry", what)
				}
			}
		})
	}
}

// TestMasterKeyInputVectorsThroughSecure drives encryption.json's
// master_key_input rows through the secure preset itself, as its argument
// and through CACHEKIT_MASTER_KEY: each accept row's hex string is taken
// (PRE-16, PRE-22), its bytes are hex_decode(string) (PRE-17, PRE-18) and
// the Client reads the row's sealed interop entry under the default tenant
// (PRE-25); each reject row, shorter or malformed, fails construction with
// ErrConfig (PRE-23) and no echo of the key; each raw reject row is refused
// by the raw-bytes entry point, encryption.Config.MasterKey, which takes
// exactly 32 bytes and reads the accept rows (PRE-26).
// Secure("") falls back to CACHEKIT_MASTER_KEY (PRE-19).
func TestMasterKeyInputVectorsThroughSecure(t *testing.T) {
	// Not parallel: t.Setenv.
	_, rdb := withRedis(t)
	var f struct {
		In struct {
			Accept []struct {
				Name          string `json:"name"`
				MasterKeyHex  string `json:"master_key_hex"`
				PlaintextHex  string `json:"plaintext_hex"`
				CiphertextHex string `json:"ciphertext_hex"`
				CacheKey      string `json:"cache_key"`
			} `json:"accept_vectors"`
			Reject []struct {
				Name         string `json:"name"`
				MasterKeyHex string `json:"master_key_hex"`
			} `json:"reject_vectors"`
			RawReject []struct {
				Name      string `json:"name"`
				RawKeyHex string `json:"raw_key_hex"`
			} `json:"raw_reject_vectors"`
		} `json:"master_key_input"`
	}
	vectors.Decode(t, "encryption.json", &f)
	if len(f.In.Accept) == 0 || len(f.In.Reject) == 0 || len(f.In.RawReject) == 0 {
		t.Fatal("master_key_input has an empty group")
	}
	t.Setenv(PreviousMasterKeysEnv, "")
	t.Setenv(NameKeyEnv, "")
	for _, row := range f.In.Accept {
		t.Run(row.Name, func(t *testing.T) {
			t.Setenv(MasterKeyEnv, row.MasterKeyHex)
			want, err := protocol.DecodeMsgpack(vectors.Hex(t, row.PlaintextHex), protocol.DefaultDecodeLimits)
			if err != nil {
				t.Fatal(err)
			}
			plant(t, rdb, row.CacheKey, vectors.Hex(t, row.CiphertextHex))
			for how, arg := range map[string]string{"argument": row.MasterKeyHex, "environment": ""} {
				o, err := Secure(arg)
				if err != nil {
					t.Fatalf("Secure by %s refused an accept row: %v", how, err)
				}
				if !bytes.Equal(o.Encryption.MasterKey, vectors.Hex(t, row.MasterKeyHex)) {
					t.Fatalf("Secure by %s holds other key bytes than hex_decode(string)", how)
				}
				o.Redis, o.Interop, o.SWR, o.Invalidation = rdb, true, nil, nil
				c := newClient(t, o)
				var got any
				if err := c.Get(bg, row.CacheKey, &got); err != nil || !reflect.DeepEqual(got, want) {
					t.Fatalf("Secure by %s reads %#v, %v; want %#v", how, got, err, want)
				}
			}
			raw := newClient(t, Options{Redis: rdb, Interop: true, Encryption: &encryption.Config{MasterKey: vectors.Hex(t, row.MasterKeyHex)}})
			var got any
			if err := raw.Get(bg, row.CacheKey, &got); err != nil || !reflect.DeepEqual(got, want) {
				t.Fatalf("raw key reads %#v, %v", got, err)
			}
		})
	}
	for _, row := range f.In.Reject {
		t.Run(row.Name, func(t *testing.T) {
			t.Setenv(MasterKeyEnv, row.MasterKeyHex)
			for how, arg := range map[string]string{"argument": row.MasterKeyHex, "environment": ""} {
				if row.MasterKeyHex == "" && how == "argument" {
					continue // "" is the environment's spelling
				}
				_, err := Secure(arg)
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("Secure by %s: %v, want ErrConfig", how, err)
				}
				if len(row.MasterKeyHex) >= 8 && strings.Contains(err.Error(), row.MasterKeyHex) {
					t.Fatalf("the error repeats the key: %v", err)
				}
			}
		})
	}
	for _, row := range f.In.RawReject {
		t.Run(row.Name, func(t *testing.T) {
			_, err := New(Options{L1MaxBytes: 1, Encryption: &encryption.Config{MasterKey: vectors.Hex(t, row.RawKeyHex)}})
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("raw key of %d bytes: %v, want ErrConfig", len(row.RawKeyHex)/2, err)
			}
		})
	}
}
