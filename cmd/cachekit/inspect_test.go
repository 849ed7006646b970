package main

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// fingerprintHex is the published fingerprint of keyHex's tenant key.
func fingerprintHex(t *testing.T, keyHex, tenant string) string {
	t.Helper()
	k, err := encryption.ParseMasterKeyHex(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	fp, err := encryption.Fingerprint(k, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(fp[:])
}

// field returns the value of an inspect report line, or fails.
func field(t *testing.T, r result, label string) string {
	t.Helper()
	for _, l := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, label+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("inspect output has no %q line:\n%s", label, r.stdout)
	return ""
}

func TestInspectHealthyPlain(t *testing.T) {
	s := newStack(t)
	tool(t, s.env, "set", "user:42", `{"name":"Ada","id":18446744073709551615}`).want(t, exitOK)
	r := tool(t, s.env, "inspect", "user:42").want(t, exitOK)
	if got := field(t, r, "encryption"); got != "none (plaintext)" {
		t.Fatalf("encryption: %q", got)
	}
	if got := field(t, r, "stored size"); got != strconv.Itoa(len(s.raw(t, "user:42")))+" bytes" {
		t.Fatalf("stored size: %q", got)
	}
	if got := field(t, r, "checksum"); !strings.HasPrefix(got, "ok (xxHash3-64 ") {
		t.Fatalf("checksum: %q", got)
	}
	if got := field(t, r, "envelope"); got != `ByteStorage, compressed_data as bin, format "msgpack"` {
		t.Fatalf("envelope: %q", got)
	}
	if !regexp.MustCompile(`^\d+ bytes \(ratio \d+\.\d\d:1\)$`).MatchString(field(t, r, "original")) {
		t.Fatalf("original: %q", field(t, r, "original"))
	}
	if got := field(t, r, "value"); got != `{"id":18446744073709551615,"name":"Ada"}` {
		t.Fatalf("value: %q", got)
	}
}

func TestInspectSecureAndRotation(t *testing.T) {
	s := newStack(t)
	const tenant = "テナント"
	// Written while oldKeyHex was current.
	tool(t, s.with("CACHEKIT_MASTER_KEY="+oldKeyHex), "set", "acct:1", `"v"`, "--secure", "--tenant", tenant).want(t, exitOK)
	// Read after rotation: testKeyHex current, oldKeyHex previous.
	rotated := s.with("CACHEKIT_MASTER_KEY="+testKeyHex, "CACHEKIT_PREVIOUS_MASTER_KEYS= "+otherKeyHex+" , "+oldKeyHex)
	r := tool(t, rotated, "inspect", "acct:1", "--secure", "--tenant", tenant).want(t, exitOK)
	mustNotLeak(t, r)
	if got, want := field(t, r, "keyring entry"), "previous #2, fingerprint "+fingerprintHex(t, oldKeyHex, tenant); got != want {
		t.Fatalf("keyring entry %q, want %q", got, want)
	}
	if got := field(t, r, "nonce"); !regexp.MustCompile(`^instance id [0-9a-f]{16}, counter 0 \(authenticated\)$`).MatchString(got) {
		t.Fatalf("nonce: %q", got)
	}
	if got := tool(t, rotated, "get", "acct:1", "--secure", "--tenant", tenant).want(t, exitOK).line(); got != `"v"` {
		t.Fatalf("get after rotation: %s", got)
	}
	// Written under the current key.
	tool(t, rotated, "set", "acct:2", `"w"`, "--secure", "--tenant", tenant).want(t, exitOK)
	r = tool(t, rotated, "inspect", "acct:2", "--tenant", tenant, "--secure").want(t, exitOK)
	if got, want := field(t, r, "keyring entry"), "current, fingerprint "+fingerprintHex(t, testKeyHex, tenant); got != want {
		t.Fatalf("keyring entry %q, want %q", got, want)
	}
	// Without --secure the bytes are only said to look encrypted.
	r = tool(t, rotated, "inspect", "acct:2").want(t, exitIntegrity)
	if got := field(t, r, "encryption"); !strings.HasPrefix(got, "looks encrypted") {
		t.Fatalf("encryption: %q", got)
	}
	if !strings.Contains(field(t, r, "nonce"), "(unauthenticated)") {
		t.Fatal("an unverified nonce is not marked unauthenticated")
	}
}

func TestInspectTampered(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	tool(t, env, "set", "acct:1", `{"n":1}`, "--secure").want(t, exitOK)
	sealed := s.raw(t, "acct:1")
	for i := range len(sealed) * 8 {
		if i%7 != 0 && i >= 96 { // every nonce bit, then a spread of the rest
			continue
		}
		b := append([]byte(nil), sealed...)
		b[i/8] ^= 1 << (i % 8)
		s.put(t, "acct:t", b)
		r := tool(t, env, "inspect", "acct:t", "--secure").want(t, exitIntegrity)
		if got := field(t, r, "encryption"); got != "does NOT authenticate under this keyring, tenant and key" {
			t.Fatalf("bit %d: encryption: %q", i, got)
		}
		if strings.Contains(r.stdout, "value:") {
			t.Fatalf("bit %d: a tampered entry printed a value", i)
		}
	}
	// Plaintext envelope with a corrupted checksum.
	tool(t, s.env, "set", "plain:1", `"hello hello hello"`).want(t, exitOK)
	b := s.raw(t, "plain:1")
	// fixarray(4), bin8 header, compressed_data, then the 8-int checksum array.
	if len(b) < 4 || b[0] != 0x94 || b[1] != 0xc4 || len(b) < 3+int(b[2])+3 || b[3+int(b[2])] != 0x98 {
		t.Fatalf("unexpected envelope layout % x", b)
	}
	off := 3 + int(b[2])
	if b[off+1] == 0xcc {
		b[off+2] ^= 1
	} else {
		b[off+1] ^= 1
	}
	s.put(t, "plain:t", b)
	r := tool(t, s.env, "inspect", "plain:t").want(t, exitIntegrity)
	if got := field(t, r, "checksum"); !strings.HasPrefix(got, "MISMATCH") {
		t.Fatalf("checksum: %q", got)
	}
	if !strings.Contains(r.stderr, "checksum mismatch") {
		t.Fatalf("stderr: %q", r.stderr)
	}
	tool(t, s.env, "get", "plain:t").want(t, exitIntegrity)
}

func TestInspectSettingsMismatchHints(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	tool(t, env, "set", "a", `1`, "--secure", "--no-compression").want(t, exitOK)
	r := tool(t, env, "inspect", "a", "--secure").want(t, exitIntegrity)
	if got := field(t, r, "hint"); !strings.Contains(got, "compressed=False") {
		t.Fatalf("hint: %q", got)
	}
	tool(t, s.env, "set", "b", `"plain msgpack value"`, "--no-compression").want(t, exitOK)
	r = tool(t, s.env, "inspect", "b").want(t, exitIntegrity)
	if got := field(t, r, "hint"); !strings.Contains(got, "--no-compression") {
		t.Fatalf("hint: %q", got)
	}
	tool(t, s.env, "inspect", "b", "--no-compression").want(t, exitOK)
}

// ckFrame builds a cachekit-py CK v3 frame (spec: wire-format.md, "Python:
// CK v3 frame"): magic, version 3, big-endian header length, JSON header,
// payload.
func ckFrame(header string, payload []byte) []byte {
	b := []byte{'C', 'K', 3, 0, 0, 0, 0}
	binary.BigEndian.PutUint32(b[3:], uint32(len(header)))
	return append(append(b, header...), payload...)
}

func TestInspectForeignEntries(t *testing.T) {
	s := newStack(t)
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	fp := fingerprintHex(t, testKeyHex, "default")
	frames := map[string][]byte{
		"py:plain": ckFrame(`{"s": "default", "m": {"format": "msgpack", "compressed": false}, "v": "2.0"}`,
			[]byte("hello, cachekit!")),
		"py:encrypted": ckFrame(`{"s": "default", "m": {"format": "msgpack", "encrypted": true, "key_fingerprint": "`+fp+`"}, "v": "2.0"}`,
			make([]byte, 40)),
	}
	for key, b := range frames {
		s.put(t, key, b)
		for _, flags := range [][]string{nil, {"--secure"}, {"--interop"}} {
			r := tool(t, env, append([]string{"inspect", key}, flags...)...).want(t, exitIntegrity)
			if got := field(t, r, "container"); !strings.Contains(got, "CK frame") {
				t.Fatalf("container: %q", got)
			}
			if got := field(t, r, "serializer"); got != `"default"` {
				t.Fatalf("serializer: %q", got)
			}
			if !strings.Contains(r.stderr, "Python SDK") {
				t.Fatalf("stderr: %q", r.stderr)
			}
		}
	}
	r := tool(t, env, "inspect", "py:encrypted", "--secure").want(t, exitIntegrity)
	if got := field(t, r, "our keyring"); got != "fingerprint matches the current key" {
		t.Fatalf("our keyring: %q", got)
	}
	if got := tool(t, env, "get", "py:plain").want(t, exitIntegrity); !strings.Contains(got.stderr, "Python SDK") {
		t.Fatalf("get stderr: %q", got.stderr)
	}
	// Frames broken at each check still say what they are.
	for i, b := range [][]byte{[]byte("CK\x03"), []byte("CK\x04\x00\x00\x00\x00"), []byte("CK\x03\x00\x00\x00\x09{}")} {
		s.put(t, "py:bad", b)
		if r := tool(t, env, "inspect", "py:bad").want(t, exitIntegrity); !strings.Contains(r.stdout, "CK frame") {
			t.Fatalf("bad frame %d: %q", i, r.stdout)
		}
	}
	// Bytes no CacheKit SDK wrote.
	s.put(t, "other", []byte("hello"))
	tool(t, env, "inspect", "other").want(t, exitIntegrity)
	tool(t, env, "inspect", "other", "--secure").want(t, exitIntegrity)
}

// TestRejectVectorsThroughCLI plants every decode-bounds.json reject vector
// and interop-mode.json's reader reject vector in a real Redis, as each
// container stores it (the envelope, plain msgpack with --no-compression,
// an interop value with --interop; unencrypted and sealed for --secure),
// and reads it with the tool's get and inspect, the operator's untrusted
// entry points (IOP-31): each exits 3 (the entry exists and does not open)
// with a message that carries the structural guard's own reason (what
// protocol.CheckMsgpack says of the payload), never a value.
func TestRejectVectorsThroughCLI(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	key, err := encryption.ParseMasterKeyHex(testKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	m, err := encryption.NewManager(encryption.Config{MasterKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	modes := []struct {
		name  string
		flags []string
	}{
		{"envelope", nil},
		{"plain", []string{"--no-compression"}},
		{"interop", []string{"--interop"}},
		{"secure/envelope", []string{"--secure"}},
		{"secure/plain", []string{"--secure", "--no-compression"}},
		{"secure/interop", []string{"--secure", "--interop"}},
	}
	env := s.with("CACHEKIT_MASTER_KEY=" + testKeyHex)
	for _, mode := range modes {
		secure := strings.HasPrefix(mode.name, "secure/")
		compressed := strings.HasSuffix(mode.name, "envelope")
		for _, p := range vectors.RejectPayloads(t) {
			t.Run(mode.name+"/"+p.Name, func(t *testing.T) {
				guard := protocol.CheckMsgpack(p.Bytes, protocol.DefaultDecodeLimits)
				var fe *protocol.FormatError
				if !errors.As(guard, &fe) || fe.Op != "msgpack" {
					t.Fatalf("the guard's verdict on the vector is %v, want a structural rejection", guard)
				}
				k, err := cachekit.InteropKey("conformance", "cli", mode.name, p.Name)
				if err != nil {
					t.Fatal(err)
				}
				stored := p.Bytes
				if compressed {
					if stored, err = protocol.SealEnvelope(nil, stored, protocol.FormatMsgpack); err != nil {
						t.Fatal(err)
					}
				}
				if secure {
					aad, err := protocol.AppendAAD(nil, m.Tenant(), k, protocol.FormatMsgpack, compressed)
					if err != nil {
						t.Fatal(err)
					}
					if stored, err = m.Encrypt(context.Background(), nil, stored, aad); err != nil {
						t.Fatal(err)
					}
				}
				s.put(t, k, stored)
				for _, cmd := range []string{"get", "inspect"} {
					r := tool(t, env, append([]string{cmd, k}, mode.flags...)...).want(t, exitIntegrity)
					if !strings.Contains(r.stderr, fe.Reason) {
						t.Fatalf("%s: %q does not carry the structural guard's reason %q", cmd, r.stderr, fe.Reason)
					}
					if cmd == "get" && r.stdout != "" {
						t.Fatalf("get printed a value: %q", r.stdout)
					}
				}
			})
		}
	}
}
