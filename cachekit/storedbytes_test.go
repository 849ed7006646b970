package cachekit

import (
	"encoding/hex"
	"reflect"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// The bytes in Redis are exactly nonce‖AES-GCM(envelope(msgpack(v))) with
// AAD (tenant, full key, "msgpack", "True"): open them with the packages
// directly, and write an entry with the packages that the client reads.
// The AAD says format msgpack (ENC-5) and compressed True or False as the
// container is (ENC-6, ENC-10); Redis holds only ciphertext (PRE-10).
func TestStoredBytesAreTheProtocolsPlainDataFlow(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	for _, compressed := range []bool{true, false} {
		name := map[bool]string{true: "envelope", false: "plain-msgpack"}[compressed]
		t.Run(name, func(t *testing.T) {
			c := newClient(t, Options{Redis: rdb, Encryption: encConfig("acme"), KeyPrefix: "svc:", DisableCompression: !compressed})
			mustSet(t, c, "k-"+name, "ünïcode value")
			stored, err := rdb.Get(bg, "svc:k-"+name).Bytes()
			if err != nil {
				t.Fatal(err)
			}
			m, err := encryption.NewManager(*encConfig("acme"))
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			aad, err := protocol.AppendAAD(nil, "acme", "svc:k-"+name, protocol.FormatMsgpack, compressed)
			if err != nil {
				t.Fatal(err)
			}
			body, err := m.Decrypt(bg, nil, stored, aad)
			if err != nil {
				t.Fatalf("direct decrypt: %v", err)
			}
			if compressed {
				if body, err = protocol.OpenEnvelope(nil, body); err != nil {
					t.Fatalf("envelope: %v", err)
				}
			}
			want := append([]byte{0xa0 | byte(len("ünïcode value"))}, "ünïcode value"...)
			if string(body) != string(want) {
				t.Fatalf("payload %x, want msgpack str %x", body, want)
			}
			// And the reverse: sealed by hand, read by the client.
			payload := append([]byte{0xa3}, "abc"...)
			if compressed {
				payload, _ = protocol.SealEnvelope(nil, payload, protocol.FormatMsgpack)
			}
			aad, _ = protocol.AppendAAD(nil, "acme", "svc:byhand", protocol.FormatMsgpack, compressed)
			sealed, err := m.Encrypt(bg, nil, payload, aad)
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(bg, "svc:byhand", sealed, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := Get[string](bg, c, "byhand"); err != nil || v != "abc" {
				t.Fatalf("hand-sealed entry: %q %v", v, err)
			}
		})
	}
}

// interop-mode.json's encryption vector and encryption.json's
// default_tenant vector are interop entries as another SDK wrote them: put
// their bytes in Redis under their key and read them through the client.
// Both are read under the AAD the interop container implies, compressed
// False (ENC-10), the default tenant "default" (PRE-27) for key derivation
// and AAD alike (PRE-28), the reference ciphertext opening (PRE-29) through
// the Client's own suite (IOP-36).
func TestInteropVectorsReadThroughClient(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	type row struct {
		Name          string `json:"name"`
		MasterKeyHex  string `json:"master_key_hex"`
		TenantID      string `json:"tenant_id"`
		CacheKey      string `json:"cache_key"`
		CiphertextHex string `json:"ciphertext_hex"`
		PlaintextHex  string `json:"plaintext_hex"`
	}
	rows := vectors.Group[row](t, "interop-mode.json", "encryption_vectors")
	var top struct {
		MasterKeyHex  string `json:"master_key_hex"`
		DefaultTenant struct {
			Vectors []row `json:"vectors"`
		} `json:"default_tenant"`
	}
	vectors.Decode(t, "encryption.json", &top)
	for _, r := range top.DefaultTenant.Vectors {
		r.MasterKeyHex = top.MasterKeyHex // tenant left empty: the client must default to "default"
		rows = append(rows, r)
	}
	if len(rows) < 2 {
		t.Fatalf("expected the interop and default-tenant rows, got %d", len(rows))
	}
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			key, err := encryption.ParseMasterKeyHex(r.MasterKeyHex)
			if err != nil {
				t.Fatal(err)
			}
			ct, _ := hex.DecodeString(r.CiphertextHex)
			if err := rdb.Set(bg, r.CacheKey, ct, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Interop: true,
				Encryption: &encryption.Config{MasterKey: key, Tenant: r.TenantID}})
			var got map[string]any
			if err := c.Get(bg, r.CacheKey, &got); err != nil {
				t.Fatalf("read vector entry: %v", err)
			}
			if got["name"] != "alice" || toInt(got["age"]) != 30 || len(got) != 2 {
				t.Fatalf("value %#v", got)
			}
			// Written back by this client, the plaintext is the same canonical bytes.
			var v any = map[string]any{"age": 30, "name": "alice"}
			mustSetTTL(t, c, r.CacheKey, v, time.Minute)
			stored, _ := rdb.Get(bg, r.CacheKey).Bytes()
			m, _ := encryption.NewManager(encryption.Config{MasterKey: key, Tenant: r.TenantID})
			defer m.Close()
			tenant := r.TenantID
			if tenant == "" {
				tenant = "default"
			}
			aad, _ := protocol.AppendAAD(nil, tenant, r.CacheKey, protocol.FormatMsgpack, false)
			pt, err := m.Decrypt(bg, nil, stored, aad)
			if err != nil || hex.EncodeToString(pt) != r.PlaintextHex {
				t.Fatalf("re-written plaintext %x (%v), want %s", pt, err, r.PlaintextHex)
			}
		})
	}
}

// TestInteropModeKeysAndHelpers: an interop Client takes only interop/v1
// keys, stores a value as one plain msgpack document under the key
// InteropKey derives (never the envelope) and reads it back, and a Client
// not in interop mode refuses the helpers (IOP-21, IOP-22).
func TestInteropModeKeysAndHelpers(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, Interop: true, Encryption: encConfig("")})
	if err := c.Set(bg, "not an interop key", 1); err == nil {
		t.Fatal("interop client accepted a free-form key")
	}
	args := []any{int64(42), "x"}
	if err := c.InteropSet(bg, "users", "get_user", args, map[string]any{"b": 1, "a": []any{true, nil}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := c.InteropGet(bg, "users", "get_user", args, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got["a"], []any{true, nil}) {
		t.Fatalf("%#v", got)
	}
	key, _ := InteropKey("users", "get_user", args...)
	if n, _ := rdb.Exists(bg, key).Result(); n != 1 {
		t.Fatal("interop entry not under its interop key")
	}
	plain := newClient(t, Options{L1MaxBytes: 1 << 10})
	if err := plain.InteropSet(bg, "users", "get_user", args, 1, time.Minute); err == nil {
		t.Fatal("interop helper worked on an auto-mode client")
	}
}
