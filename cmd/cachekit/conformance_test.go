package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

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
