package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

var cmdInspect = &command{
	name:     "inspect",
	synopsis: "inspect KEY [flags]",
	summary:  "explain the stored bytes of KEY: encryption, keyring entry, envelope, value",
	help: `Reads KEY's raw bytes from Redis and explains them step by step:
  - size, and whether they are a cachekit-py auto-mode entry (CK frame);
  - encryption: without --secure, whether the bytes look encrypted; with
    --secure, whether they authenticate, under which keyring entry (named by
    its fingerprint, never the key) and the nonce's instance id and counter;
  - the ByteStorage envelope: compressed and original size, ratio, encoding,
    format and the checksum verdict;
  - the decoded value as JSON.
The exit code is the verdict: 0 when the entry opens with these flags (what
"get" would do), 3 when it does not (the last stderr line says why), 1 when
KEY is missing. Nonces are not secret; one that did not authenticate is
marked "unauthenticated". No key material is ever printed.`,
	examples: []string{
		"cachekit inspect user:42",
		"cachekit inspect session:7 --secure --tenant acme",
		"cachekit inspect users:get_user:61598716255080080f6456eb065c2e51badfaa4320b0efe97469c29cffee8875 --interop --secure",
	},
	minArgs: 1, maxArgs: 1,
	run: runInspect,
}

// report writes "label: value" lines.
type report struct{ w io.Writer }

func (r report) line(label, format string, args ...any) {
	fmt.Fprintf(r.w, "%-14s %s\n", label+":", fmt.Sprintf(format, args...))
}

func runInspect(ctx context.Context, e *env, g *globalFlags, args []string) error {
	key := args[0]
	c, err := openClient(g, e.getenv, true) // with --secure: the keys the digest is derived from
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := openManager(g, e.getenv)
	if err != nil {
		return err
	}
	if m != nil {
		defer m.Close()
	}
	stored, err := c.Raw().Get(ctx, key)
	if err != nil {
		return err
	}
	fullKey := g.prefix + key
	r := report{e.stdout}
	if g.secure {
		r.line("key digest", "%s", c.KeyDigest(key))
	} else {
		r.line("key digest", "unavailable without --secure (the digest logs show is keyed by the master key)")
	}
	r.line("mode", "%s", modeName(g))
	r.line("stored size", "%d bytes", len(stored))

	if isPythonFrame(stored) {
		return inspectPythonFrame(r, m, stored)
	}
	body := stored
	if m != nil {
		if body, err = inspectDecrypt(ctx, r, g, m, fullKey, stored); err != nil {
			return err
		}
	} else if !looksPlain(g, stored) && len(stored) >= encryption.Overhead {
		r.line("encryption", "looks encrypted (neither %s nor msgpack)", containerName(g))
		printNonce(r, stored, "unauthenticated")
		return integrityErrorf("entry looks encrypted; pass --secure with $%s (and --tenant) to open it", envMasterKey)
	} else {
		r.line("encryption", "none (plaintext)")
	}
	payload := body
	if g.compressed() {
		if payload, err = inspectEnvelope(r, body); err != nil {
			return err
		}
	} else if _, perr := protocol.ParseEnvelope(body); perr == nil {
		r.line("note", "the value is itself a ByteStorage envelope: written with compression on? (drop --no-compression)")
	}
	v, err := protocol.DecodeMsgpack(payload, protocol.DefaultDecodeLimits)
	if err != nil {
		r.line("value", "not readable msgpack")
		return integrityErrorf("value is not readable msgpack: %v", err)
	}
	r.line("value", "%s", appendJSON(nil, v))
	return nil
}

// modeName describes the container the flags select.
func modeName(g *globalFlags) string {
	switch {
	case g.interop:
		return "interop (canonical msgpack, AAD compressed=False)"
	case g.noCompression:
		return "auto, plain msgpack (--no-compression)"
	default:
		return "auto, ByteStorage envelope (LZ4 + xxHash3-64)"
	}
}

// containerName names what unencrypted bytes should be under the flags.
func containerName(g *globalFlags) string {
	if g.compressed() {
		return "a ByteStorage envelope"
	}
	return "plain msgpack"
}

// looksPlain reports whether b reads as an unencrypted entry of either
// container, so a plaintext entry is never called "encrypted".
func looksPlain(g *globalFlags, b []byte) bool {
	if _, err := protocol.ParseEnvelope(b); err == nil {
		return true
	}
	return protocol.CheckMsgpack(b, protocol.DefaultDecodeLimits) == nil
}

// inspectDecrypt opens stored under the keyring and reports which entry
// authenticated it. On failure it explains what it can and returns an
// integrity error.
func inspectDecrypt(ctx context.Context, r report, g *globalFlags, m *encryption.Manager, fullKey string, stored []byte) ([]byte, error) {
	tenant := m.Tenant()
	if len(stored) < encryption.Overhead {
		r.line("encryption", "cannot be encrypted: shorter than %d bytes", encryption.Overhead)
		if looksPlain(g, stored) {
			return nil, integrityErrorf("entry is not encrypted; a --secure reader refuses plaintext")
		}
		return nil, integrityErrorf("entry is too short to be encrypted")
	}
	plain, idx, err := decryptWith(ctx, m, stored, tenant, fullKey, g.compressed())
	if err == nil {
		st := m.Stats()
		fp := st.Fingerprint
		if idx > 0 && idx-1 < len(st.PreviousFingerprints) {
			fp = st.PreviousFingerprints[idx-1]
		}
		r.line("encryption", "AES-256-GCM, authenticated (tenant %s)", strconv.Quote(tenant))
		r.line("keyring entry", "%s, fingerprint %s", keyLabel(idx), fp)
		printNonce(r, stored, "authenticated")
		return plain, nil
	}
	if !errors.Is(err, encryption.ErrAuthFailed) {
		return nil, err
	}
	r.line("encryption", "does NOT authenticate under this keyring, tenant and key")
	printNonce(r, stored, "unauthenticated")
	if _, _, aerr := decryptWith(ctx, m, stored, tenant, fullKey, !g.compressed()); aerr == nil {
		r.line("hint", "it authenticates with compressed=%s: the writer used the other compression setting", pyBool(!g.compressed()))
	} else if looksPlain(g, stored) {
		r.line("hint", "the bytes read as an unencrypted entry: written without encryption")
	}
	return nil, integrityErrorf("%s", authFailedMsg)
}

// decryptWith rebuilds the AAD for one guess of the writer's settings and
// tries the keyring.
func decryptWith(ctx context.Context, m *encryption.Manager, stored []byte, tenant, fullKey string, compressed bool) ([]byte, int, error) {
	aad, err := protocol.AppendAAD(nil, tenant, fullKey, protocol.FormatMsgpack, compressed)
	if err != nil {
		return nil, 0, usageErrorf("cannot build the AAD: %v", err)
	}
	return m.DecryptIndex(ctx, nil, stored, aad)
}

// pyBool spells a flag the way the AAD does.
func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// printNonce reports the nonce's instance id and counter. They are not
// secret; status says whether the tag check vouched for them.
func printNonce(r report, stored []byte, status string) {
	id, ctr, err := encryption.ParseNonce(stored)
	if err != nil {
		return
	}
	r.line("nonce", "instance id %016x, counter %d (%s)", id, ctr, status)
}

// inspectEnvelope reports the ByteStorage envelope and returns its opened
// payload.
func inspectEnvelope(r report, body []byte) ([]byte, error) {
	env, err := protocol.ParseEnvelope(body)
	if err != nil {
		r.line("envelope", "invalid")
		if protocol.CheckMsgpack(body, protocol.DefaultDecodeLimits) == nil {
			r.line("hint", "the bytes are plain msgpack: written with compression off? (try --no-compression)")
		}
		return nil, integrityErrorf("not a valid ByteStorage envelope: %v", err)
	}
	encoding := "bin"
	if env.LegacyArray {
		encoding = "legacy int array"
	}
	r.line("envelope", "ByteStorage, compressed_data as %s, format %s", encoding, strconv.Quote(env.Format))
	ratio := "n/a"
	if len(env.Compressed) > 0 {
		ratio = strconv.FormatFloat(float64(env.OriginalSize)/float64(len(env.Compressed)), 'f', 2, 64) + ":1"
	}
	r.line("compressed", "%d bytes", len(env.Compressed))
	r.line("original", "%d bytes (ratio %s)", env.OriginalSize, ratio)
	out, err := protocol.OpenEnvelope(nil, body)
	switch {
	case errors.Is(err, protocol.ErrChecksum):
		r.line("checksum", "MISMATCH (stored xxHash3-64 %s)", hex.EncodeToString(env.Checksum[:]))
		return nil, integrityErrorf("envelope checksum mismatch: the entry is corrupted or tampered")
	case err != nil:
		r.line("checksum", "not verified")
		return nil, integrityErrorf("envelope does not open: %v", err)
	}
	r.line("checksum", "ok (xxHash3-64 %s)", hex.EncodeToString(env.Checksum[:]))
	return out, nil
}
