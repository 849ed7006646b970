package main

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
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
  - the decoded value as JSON;
  - for a negative entry (a cached not-found): whether its sealed part
    authenticates and its sealed not-after.
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
	c, err := openClient(g, e.getenv, true) // with --secure: the keyring the entry is opened with
	if err != nil {
		return err
	}
	defer c.Close()
	stored, err := c.Raw().Get(ctx, key)
	if err != nil {
		return err
	}
	r := report{e.stdout}
	if g.secure {
		r.line("key digest", "%s", c.KeyDigest(key))
	} else {
		r.line("key digest", "unavailable without --secure (the digest logs show is keyed by the master key)")
	}
	r.line("mode", "%s", modeName(g))
	r.line("stored size", "%d bytes", len(stored))
	if sealed, ok := cachekit.NegativeSealed(stored); ok {
		return inspectNegative(ctx, r, g, c, key, stored, sealed)
	}

	if isPythonFrame(stored) {
		// A Manager only to match the frame header's key fingerprint
		// against the keyring; the frame itself is never opened.
		m, err := openManager(g, e.getenv)
		if err != nil {
			return err
		}
		if m != nil {
			defer m.Close()
		}
		return inspectPythonFrame(r, m, stored)
	}
	// The client's own open, as get runs it; what it found at each step is
	// reported below.
	op, openErr := c.Raw().Open(ctx, key, stored)
	defer clear(op.Container)
	defer clear(op.Payload)
	if !g.secure && !looksPlain(g, stored) && len(stored) >= encryption.Overhead {
		r.line("encryption", "looks encrypted (neither %s nor msgpack)", containerName(g))
		printNonce(r, stored, "unauthenticated")
		// The reader's own refusal too: for a plaintext entry the decode
		// bounds refuse, the structural guard's.
		return integrityErrorf("entry does not open as plaintext (%s) and looks encrypted; pass --secure with $%s (and --tenant) to open it",
			strings.TrimPrefix(fmt.Sprint(openErr), "protocol: "), envMasterKey)
	}
	if g.secure {
		if err := inspectDecrypt(ctx, r, g, e.getenv, key, stored, op, openErr); err != nil {
			return err
		}
	} else {
		r.line("encryption", "none (plaintext)")
	}
	if op.Container == nil { // refused before any step reported here (its size, or ctx)
		return openRefused(ctx, openErr)
	}
	if g.compressed() {
		if err := inspectEnvelope(r, op.Container, op.Payload != nil, openErr); err != nil {
			return err
		}
	} else if errors.Is(openErr, protocol.ErrForeignContainer) {
		r.line("value", "a ByteStorage envelope, which a --no-compression reader refuses")
		return integrityErrorf("the value is a ByteStorage envelope: written with compression on, or another SDK's container (drop --no-compression)")
	}
	if openErr != nil {
		if op.Payload == nil { // not a step of this report: pass the client's verdict on
			return openRefused(ctx, openErr)
		}
		r.line("value", "not readable msgpack")
		return integrityErrorf("value is not readable msgpack: %v", openErr)
	}
	v, err := protocol.DecodeMsgpack(op.Payload, protocol.DefaultDecodeLimits)
	if err != nil {
		r.line("value", "not readable msgpack")
		return integrityErrorf("value is not readable msgpack: %v", err)
	}
	r.line("value", "%s", appendJSON(nil, v))
	return nil
}

// inspectNegative reports a negative entry (a cached not-found): its head,
// whether its sealed part authenticates (with --secure; its key-bound sum
// without), and its sealed not-after. It returns an integrity error when
// the client would not read it as a negative hit.
func inspectNegative(ctx context.Context, r report, g *globalFlags, c *cachekit.Client, key string, stored, sealed []byte) error {
	op, err := c.Raw().Open(ctx, key, stored)
	r.line("kind", "negative entry: a cached not-found (%d-byte head, %d sealed bytes)", len(stored)-len(sealed), len(sealed))
	switch {
	case g.secure && op.KeyIndex >= 0:
		tenant := cmp.Or(g.tenant, encryption.DefaultTenant)
		r.line("encryption", "AES-256-GCM, authenticated (tenant %s)", strconv.Quote(tenant))
		r.line("keyring entry", "%s, fingerprint %s", keyLabel(op.KeyIndex), op.KeyFingerprint)
		printNonce(r, sealed, "authenticated")
	case g.secure:
		r.line("encryption", "does NOT authenticate under this keyring, tenant and key")
		printNonce(r, sealed, "unauthenticated")
		return integrityErrorf("negative entry does not authenticate: forged, or copied from another key or tenant")
	case op.NotAfter.IsZero():
		r.line("encryption", "none expected, and its key-bound sum does not match")
		return integrityErrorf("negative entry does not open as plaintext: forged, copied from another key, or encrypted (pass --secure with its key and --tenant)")
	default:
		r.line("encryption", "none (plaintext, bound to its key by a SHA-224)")
	}
	if !op.NotAfter.IsZero() {
		r.line("not after", "%s", op.NotAfter.UTC().Format(time.RFC3339Nano))
	}
	if err != nil { // past its not-after (replayed), or a sealed part that is no negative entry's
		return integrityErrorf("negative entry refused: %s", strings.TrimPrefix(err.Error(), "protocol: "))
	}
	r.line("value", "none: the key reads as not found (cachekit get exits 1)")
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

// inspectDecrypt reports the decryption step of the client's open (op and
// openErr, from Raw.Open of stored): which keyring entry authenticated the
// entry or, when none did, what it can tell. It returns an integrity error
// when the entry did not decrypt.
func inspectDecrypt(ctx context.Context, r report, g *globalFlags, getenv func(string) string, key string, stored []byte, op cachekit.OpenedEntry, openErr error) error {
	tenant := g.tenant
	if tenant == "" {
		tenant = encryption.DefaultTenant
	}
	if op.KeyIndex >= 0 {
		r.line("encryption", "AES-256-GCM, authenticated (tenant %s)", strconv.Quote(tenant))
		r.line("keyring entry", "%s, fingerprint %s", keyLabel(op.KeyIndex), op.KeyFingerprint)
		printNonce(r, stored, "authenticated")
		return nil
	}
	if errors.As(openErr, new(*encryption.LengthError)) {
		r.line("encryption", "cannot be encrypted: shorter than %d bytes", encryption.Overhead)
		if looksPlain(g, stored) {
			return integrityErrorf("entry is not encrypted; a --secure reader refuses plaintext")
		}
		return integrityErrorf("entry is too short to be encrypted")
	}
	if !errors.Is(openErr, cachekit.ErrAuthFailed) {
		return openRefused(ctx, openErr)
	}
	r.line("encryption", "does NOT authenticate under this keyring, tenant and key")
	printNonce(r, stored, "unauthenticated")
	if otherCompressionOpens(ctx, g, getenv, key, stored) {
		r.line("hint", "it authenticates with compressed=%s: the writer used the other compression setting", pyBool(!g.compressed()))
	} else if looksPlain(g, stored) {
		r.line("hint", "the bytes read as an unencrypted entry: written without encryption")
	}
	return integrityErrorf("%s", authFailedMsg)
}

// otherCompressionOpens reports whether a client with the same keyring,
// tenant and prefix but the other compressed flag in its AAD (the ByteStorage
// envelope on, or plain msgpack) authenticates stored: the client's own open
// on a second, Redis-less client.
func otherCompressionOpens(ctx context.Context, g *globalFlags, getenv func(string) string, key string, stored []byte) bool {
	alt := *g
	alt.redisURL, alt.interop, alt.noCompression = "", false, g.compressed()
	c, err := openOffline(&alt, getenv)
	if err != nil {
		return false
	}
	defer c.Close()
	op, _ := c.Raw().Open(ctx, key, stored)
	clear(op.Container)
	clear(op.Payload)
	return op.KeyIndex >= 0
}

// openRefused is the outcome of an open that err ended at a step the report
// does not describe (the MaxValueBytes bound): an integrity error, as get's
// verdict on the entry, unless the open never judged the entry (the tool's
// deadline or interrupt), which keeps its own exit code.
func openRefused(ctx context.Context, err error) error {
	if ctx.Err() != nil || errors.Is(err, cachekit.ErrClosed) {
		return err
	}
	return integrityErrorf("entry does not open: %v", err)
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

// inspectEnvelope describes the ByteStorage envelope body and reports the
// client's verdict on it: opened says the client's open got the payload out
// of it, openErr is that open's error. It returns an integrity error when
// the envelope did not open.
func inspectEnvelope(r report, body []byte, opened bool, openErr error) error {
	env, err := protocol.ParseEnvelope(body)
	if err != nil {
		r.line("envelope", "invalid")
		if protocol.CheckMsgpack(body, protocol.DefaultDecodeLimits) == nil {
			r.line("hint", "the bytes are plain msgpack: written with compression off? (try --no-compression)")
		}
		return integrityErrorf("not a valid ByteStorage envelope: %v", err)
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
	switch {
	case opened:
	case errors.Is(openErr, protocol.ErrChecksum):
		r.line("checksum", "MISMATCH (stored xxHash3-64 %s)", hex.EncodeToString(env.Checksum[:]))
		return integrityErrorf("envelope checksum mismatch: the entry is corrupted or tampered")
	default:
		r.line("checksum", "not verified")
		return integrityErrorf("envelope does not open: %v", openErr)
	}
	r.line("checksum", "ok (xxHash3-64 %s)", hex.EncodeToString(env.Checksum[:]))
	return nil
}
