package observe

import (
	"cmp"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// What logs, spans and errors show in place of a cache key or an error's
// text.

// Digester names keys by a keyed digest, so that a digest cannot be
// matched against guessed keys by anyone without its key.
type Digester struct{ key [32]byte }

// digestLabel separates the digest key from every key the encryption
// package derives from the same master key.
const digestLabel = "cachekit-go log digest v1"

// NewDigester returns a Digester keyed from masterKey and tenant
// (HKDF-SHA256 under its own label), so that every process given the same
// master key names a key with the same digest; with masterKey nil (no
// encryption, or a KeyProvider) its key is random, and digests correlate
// within one Digester only.
func NewDigester(masterKey []byte, tenant string) Digester {
	var d Digester
	if len(masterKey) == len(d.key) {
		if b, err := hkdf.Key(sha256.New, masterKey, []byte(digestLabel), tenant, len(d.key)); err == nil {
			copy(d.key[:], b)
			clear(b)
			return d
		}
	}
	_, _ = rand.Read(d.key[:])
	return d
}

// DigesterFor returns the Digester of a Client configured with enc (nil:
// no encryption): keyed from its static master key and tenant, random
// without encryption or with a KeyProvider (see cachekit's KeyDigest).
func DigesterFor(enc *encryption.Config) Digester {
	if enc == nil || enc.Provider != nil {
		return NewDigester(nil, "")
	}
	return NewDigester(enc.MasterKey, cmp.Or(enc.Tenant, encryption.DefaultTenant))
}

// Digest returns hex of the first 8 bytes of BLAKE2b-256 of fullKey, keyed
// with the Digester's key.
func (d *Digester) Digest(fullKey string) string {
	h, _ := blake2b.New256(d.key[:]) // a 32-byte key is always accepted
	h.Write([]byte(fullKey))
	var sum [blake2b.Size256]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:8])
}

// Limiter lets one event through per interval (a log line that a broken
// Redis or a flood of tampered entries would otherwise repeat). The zero
// Limiter lets the first event through.
type Limiter struct{ last atomic.Int64 }

// Allow reports whether an event at now may pass: none passed within
// every before it. Of events racing for the same turn, one passes.
func (l *Limiter) Allow(now time.Time, every time.Duration) bool {
	t, last := now.UnixNano(), l.last.Load()
	if last != 0 && t-last < int64(every) {
		return false
	}
	return l.last.CompareAndSwap(last, t)
}

// ErrorAttrs describes err, of class, for a log line without any of its
// text: its class, its Go type and the Go type of the cause at the end of
// its Unwrap chain (the first branch of a joined error), with timeout=true
// for a timeout.
func ErrorAttrs(err error, class Class) []slog.Attr {
	root := err
	for {
		var next error
		switch u := root.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[0]
			}
		}
		if next == nil {
			break
		}
		root = next
	}
	attrs := []slog.Attr{
		slog.String("error.type", class.String()),
		slog.String("error.go_type", fmt.Sprintf("%T", err)),
		slog.String("error.cause_go_type", fmt.Sprintf("%T", root)),
	}
	if guard.IsTimeout(err) {
		attrs = append(attrs, slog.Bool("timeout", true))
	}
	return attrs
}
