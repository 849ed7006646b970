package names

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"strings"
	"sync"
	"unicode/utf8"
)

// KeySize is the size of a name key in bytes.
const KeySize = 32

// sumBytes is how much of an HMAC output a name keeps: 128 bits.
const sumBytes = 16

// LocalLen is the length in bytes of the local name of a key without a
// hash tag; TaggedLen that of a key with one.
const (
	LocalLen  = 22 // base64url of 16 bytes, no padding
	TaggedLen = 2*LocalLen + 2
)

// Domain bytes: what the HMAC input names.
const (
	domainKey         = 'k'
	domainTag         = 't'
	domainFingerprint = 'f'
)

// Invalid is the local name of every key that is not valid UTF-8.
const Invalid = "\xff"

// ErrKeySize is New's error for a name key that is not KeySize bytes.
var ErrKeySize = errors.New("names: the name key must be 32 bytes")

// Namer maps application keys to local names (see the package doc). It is
// safe for concurrent use.
type Namer struct {
	front []byte // tenant and prefix, length-prefixed: the HMAC input after the domain byte
	pool  sync.Pool
	memo  memo
	fp    string
}

// state is one pooled HMAC and its input buffer.
type state struct {
	h   hash.Hash
	buf []byte
	sum [sha256.Size]byte
}

// New returns a Namer for the name key, tenant and key prefix, with a memo
// of at least memoSlots slots (rounded up to a power of two; at least 64).
// It copies key; the caller may wipe it on return.
func New(key []byte, tenant, prefix string, memoSlots int) (*Namer, error) {
	if len(key) != KeySize {
		return nil, ErrKeySize
	}
	k := append([]byte(nil), key...)
	n := &Namer{}
	n.front = binary.BigEndian.AppendUint32(n.front, uint32(len(tenant)))
	n.front = append(n.front, tenant...)
	n.front = binary.BigEndian.AppendUint32(n.front, uint32(len(prefix)))
	n.front = append(n.front, prefix...)
	n.pool.New = func() any { return &state{h: hmac.New(sha256.New, k)} }
	n.memo.init(memoSlots)
	n.fp = Fingerprint(key)
	return n, nil
}

// Fingerprint returns the hex fingerprint of a name key (the first 128
// bits of HMAC-SHA-256 under it of a fixed label): equal for equal keys,
// and revealing nothing of the key. It returns "" for a key that is not
// KeySize bytes.
func Fingerprint(key []byte) string {
	if len(key) != KeySize {
		return ""
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte{domainFingerprint})
	h.Write([]byte("cachekit name-key fingerprint v1"))
	return hex.EncodeToString(h.Sum(nil)[:sumBytes])
}

// IsFingerprint reports whether s has a fingerprint's shape: 32 lowercase
// hex digits.
func IsFingerprint(s string) bool {
	if len(s) != 2*sumBytes {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Fingerprint returns the fingerprint of n's name key.
func (n *Namer) Fingerprint() string { return n.fp }

// Local returns key's local name: what follows the prefix in its Redis
// name. It is memoized (see the package doc).
//
// The empty key maps to itself and a key that is not valid UTF-8 to
// Invalid (not valid UTF-8 either), so a client refuses both as it does
// without a name key, and no byte of such a key reaches Redis.
func (n *Namer) Local(key string) string {
	if local, ok := n.memo.get(key); ok {
		return local
	}
	if key == "" {
		return "" // refused as it is without a name key
	}
	if !utf8.ValidString(key) {
		return Invalid
	}
	local := n.compute(key)
	n.memo.put(key, local)
	return local
}

// compute is Local without the memo.
func (n *Namer) compute(key string) string {
	st := n.pool.Get().(*state)
	defer n.pool.Put(st)
	tag, tagged := HashTag(key)
	out := make([]byte, 0, TaggedLen)
	if tagged {
		out = append(out, '{')
		out = n.appendPRF(out, st, domainTag, tag)
		out = append(out, '}')
	}
	out = n.appendPRF(out, st, domainKey, key)
	return string(out)
}

// appendPRF appends the base64url of the truncated HMAC of domain, the
// tenant and prefix, and s.
func (n *Namer) appendPRF(dst []byte, st *state, domain byte, s string) []byte {
	st.buf = append(append(append(st.buf[:0], domain), n.front...), s...)
	st.h.Reset()
	st.h.Write(st.buf)
	sum := st.h.Sum(st.sum[:0])
	clear(st.buf) // it held the key
	return base64.RawURLEncoding.AppendEncode(dst, sum[:sumBytes])
}

// HashTag returns the hash tag of key by Redis's rule: the text between the
// first '{' and the first '}' after it, when that text is not empty.
func HashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}
