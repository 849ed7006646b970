package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// writePlain rewrites a tagged-JSON vector value (interop-mode.json) into
// the tool's plain JSON: $int becomes a bare integer, $float a number literal
// with a fraction, $bytes stays. It returns a non-empty skip reason for tags
// the mapping cannot express ($set, $datetime, $uuid, NaN, infinities).
func writePlain(b *strings.Builder, v any) string {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case json.Number:
		b.WriteString(string(t))
	case string:
		q, _ := json.Marshal(t)
		b.Write(q)
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if r := writePlain(b, e); r != "" {
				return r
			}
		}
		b.WriteByte(']')
	case map[string]any:
		if len(t) == 1 {
			for tag, val := range t {
				s, _ := val.(string)
				switch tag {
				case "$int":
					b.WriteString(s)
					return ""
				case "$float":
					if _, err := strconv.ParseFloat(s, 64); err != nil || strings.ContainsAny(strings.ToLower(s), "ni") {
						return "non-finite float: JSON has no literal for it"
					}
					b.WriteString(s)
					if !strings.ContainsAny(s, ".eE") {
						b.WriteString(".0")
					}
					return ""
				case "$bytes":
					b.WriteString(`{"$bytes":"` + s + `"}`)
					return ""
				case "$set", "$datetime", "$uuid":
					return tag + " has no form in the tool's JSON mapping"
				}
			}
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			q, _ := json.Marshal(k)
			b.Write(q)
			b.WriteByte(':')
			if r := writePlain(b, t[k]); r != "" {
				return r
			}
		}
		b.WriteByte('}')
	default:
		return "unexpected JSON type"
	}
	return ""
}

// convert is plainJSON with the builder's text returned.
func convert(raw json.RawMessage) (string, string) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "", "undecodable vector"
	}
	var b strings.Builder
	if reason := writePlain(&b, v); reason != "" {
		return "", reason
	}
	return b.String(), ""
}

// TestKeyVectors runs `cachekit key` for every interop-mode.json key vector
// whose arguments the JSON mapping expresses.
func TestKeyVectors(t *testing.T) {
	type row struct {
		Name        string          `json:"name"`
		Namespace   string          `json:"namespace"`
		Operation   string          `json:"operation"`
		Args        json.RawMessage `json:"args"`
		ExpectedKey string          `json:"expected_key"`
	}
	rows := vectors.Group[row](t, "interop-mode.json", "key_vectors")
	ran := 0
	for _, r := range rows {
		t.Run(r.Name, func(t *testing.T) {
			args, skip := convert(r.Args)
			if skip != "" {
				t.Skip(skip)
			}
			ran++
			got := tool(t, nil, "key", "--namespace", r.Namespace, "--operation", r.Operation, "--args", args).want(t, exitOK)
			if got.line() != r.ExpectedKey {
				t.Fatalf("key %s, want %s (args %s)", got.line(), r.ExpectedKey, args)
			}
		})
	}
	if ran == 0 {
		t.Fatal("no key vector was expressible: the conversion is broken")
	}
	t.Logf("key_vectors: %d of %d rows ran", ran, len(rows))
}

// TestValueVectorsStoreCanonicalBytes stores each interop value vector with
// `set --interop` and compares the bytes in Redis with the vector's canonical
// msgpack, then reads it back.
func TestValueVectorsStoreCanonicalBytes(t *testing.T) {
	type row struct {
		Name   string          `json:"name"`
		Value  json.RawMessage `json:"value"`
		HexOut string          `json:"canonical_msgpack_hex"`
	}
	s := newStack(t)
	key := tool(t, nil, "key", "--namespace", "vec", "--operation", "value").want(t, exitOK).line()
	for _, r := range vectors.Group[row](t, "interop-mode.json", "value_vectors") {
		t.Run(r.Name, func(t *testing.T) {
			in, skip := convert(r.Value)
			if skip != "" {
				t.Skip(skip)
			}
			tool(t, s.env, "set", key, in, "--interop").want(t, exitOK)
			if got := hex.EncodeToString(s.raw(t, key)); got != r.HexOut {
				t.Fatalf("stored %s, want %s", got, r.HexOut)
			}
			tool(t, s.env, "get", key, "--interop").want(t, exitOK)
		})
	}
}

// TestInteropEncryptionVector puts the vector's ciphertext in Redis and reads
// it with the tool, as an entry another SDK wrote.
func TestInteropEncryptionVector(t *testing.T) {
	type row struct {
		Name          string `json:"name"`
		MasterKeyHex  string `json:"master_key_hex"`
		Tenant        string `json:"tenant_id"`
		Fingerprint   string `json:"derived_key_fingerprint_hex"`
		CacheKey      string `json:"cache_key"`
		NonceHex      string `json:"nonce_hex"`
		CiphertextHex string `json:"ciphertext_hex"`
		PlaintextHex  string `json:"plaintext_hex"`
	}
	s := newStack(t)
	for _, r := range vectors.Group[row](t, "interop-mode.json", "encryption_vectors") {
		t.Run(r.Name, func(t *testing.T) {
			ct, _ := hex.DecodeString(r.CiphertextHex)
			s.put(t, r.CacheKey, ct)
			env := s.with("CACHEKIT_MASTER_KEY=" + r.MasterKeyHex)
			flags := []string{"--interop", "--secure", "--tenant", r.Tenant}
			got := tool(t, env, append([]string{"get", r.CacheKey}, flags...)...).want(t, exitOK).line()
			pt, _ := hex.DecodeString(r.PlaintextHex)
			want, err := protocol.DecodeMsgpack(pt, protocol.DefaultDecodeLimits)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(appendJSON(nil, want)) {
				t.Fatalf("get printed %s", got)
			}
			ins := tool(t, env, append([]string{"inspect", r.CacheKey}, flags...)...).want(t, exitOK)
			mustNotLeak(t, ins, r.MasterKeyHex)
			if f := field(t, ins, "keyring entry"); f != "current, fingerprint "+r.Fingerprint {
				t.Fatalf("keyring entry %q, want fingerprint %s", f, r.Fingerprint)
			}
			if !strings.HasPrefix(r.CiphertextHex, r.NonceHex) {
				t.Fatal("vector ciphertext does not start with its nonce")
			}
			_, ctr, err := encryption.ParseNonce(ct)
			if err != nil {
				t.Fatal(err)
			}
			if f, want := field(t, ins, "nonce"), "instance id "+r.NonceHex[:16]+", counter "+strconv.FormatUint(uint64(ctr), 10)+" (authenticated)"; f != want {
				t.Fatalf("nonce %q, want %q", f, want)
			}
		})
	}
}

// TestToolWritesPackagesRead decrypts entries the tool wrote with the
// encryption and protocol packages directly.
func TestToolWritesPackagesRead(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	const tenant, prefix = "tenant-ü", "app:"
	m := newManager(t, testKeyHex, tenant)
	want := map[string]any{"max": uint64(18446744073709551615), "min": int64(-9223372036854775808),
		"b": []byte{0, 0xff}, "f": 2.0, "s": "ключ"}
	in := `{"max":18446744073709551615,"min":-9223372036854775808,"b":{"$bytes":"00ff"},"f":2.0,"s":"ключ"}`

	t.Run("auto", func(t *testing.T) {
		tool(t, env, "set", "k:🔑", in, "--secure", "--tenant", tenant, "--prefix", prefix).want(t, exitOK)
		aad, _ := protocol.AppendAAD(nil, tenant, prefix+"k:🔑", protocol.FormatMsgpack, true)
		plain, err := m.Decrypt(context.Background(), nil, s.raw(t, prefix+"k:🔑"), aad)
		if err != nil {
			t.Fatalf("decrypt: %v", err)
		}
		payload, err := protocol.OpenEnvelope(nil, plain)
		if err != nil {
			t.Fatal(err)
		}
		got, err := protocol.DecodeMsgpack(payload, protocol.DefaultDecodeLimits)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %#v, %v", got, err)
		}
	})
	t.Run("interop", func(t *testing.T) {
		key := tool(t, nil, "key", "--namespace", "users", "--operation", "get", "--args", `[1]`).want(t, exitOK).line()
		tool(t, env, "set", key, in, "--secure", "--interop", "--tenant", tenant).want(t, exitOK)
		aad, _ := protocol.AppendAAD(nil, tenant, key, protocol.FormatMsgpack, false)
		plain, err := m.Decrypt(context.Background(), nil, s.raw(t, key), aad)
		if err != nil {
			t.Fatalf("decrypt: %v", err)
		}
		canon, _ := protocol.AppendCanonicalValue(nil, want)
		if !bytes.Equal(plain, canon) {
			t.Fatalf("plaintext %x is not the canonical msgpack %x", plain, canon)
		}
	})
}

// TestPackagesWriteToolReads seals entries with the packages directly and
// reads them through the tool.
func TestPackagesWriteToolReads(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	const tenant = "租户"
	m := newManager(t, testKeyHex, tenant)
	value := map[string]any{"id": uint64(1) << 63, "tags": []any{"a", int64(-1)}, "raw": []byte("\x00\x01")}
	const wantJSON = `{"id":9223372036854775808,"raw":{"$bytes":"0001"},"tags":["a",-1]}`
	msgpack, err := protocol.AppendCanonicalValue(nil, value)
	if err != nil {
		t.Fatal(err)
	}
	seal := func(t *testing.T, key string, body []byte, compressed bool) {
		aad, _ := protocol.AppendAAD(nil, tenant, key, protocol.FormatMsgpack, compressed)
		sealed, err := m.Encrypt(context.Background(), nil, body, aad)
		if err != nil {
			t.Fatal(err)
		}
		s.put(t, key, sealed)
	}
	t.Run("auto", func(t *testing.T) {
		env2, _ := protocol.SealEnvelope(nil, msgpack, protocol.FormatMsgpack)
		seal(t, "p:direct", env2, true)
		got := tool(t, env, "get", "direct", "--secure", "--tenant", tenant, "--prefix", "p:").want(t, exitOK)
		if got.line() != wantJSON {
			t.Fatalf("got %s", got.line())
		}
	})
	t.Run("no_compression", func(t *testing.T) {
		seal(t, "direct:plain", msgpack, false)
		got := tool(t, env, "get", "direct:plain", "--secure", "--tenant", tenant, "--no-compression").want(t, exitOK)
		if got.line() != wantJSON {
			t.Fatalf("got %s", got.line())
		}
	})
	t.Run("interop", func(t *testing.T) {
		key, _ := protocol.InteropKey("orders", "by_id", "ü", int64(7))
		seal(t, key, msgpack, false)
		got := tool(t, env, "get", key, "--secure", "--tenant", tenant, "--interop").want(t, exitOK)
		if got.line() != wantJSON {
			t.Fatalf("got %s", got.line())
		}
	})
}

func newManager(t *testing.T, keyHex, tenant string) *encryption.Manager {
	t.Helper()
	k, err := encryption.ParseMasterKeyHex(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	m, err := encryption.NewManager(encryption.Config{MasterKey: k, Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
