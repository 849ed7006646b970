package protocol

import (
	"encoding/binary"
	"math"
	"slices"
	"unicode/utf8"
)

// AADVersion is the first byte of every additional-authenticated-data block
// this package builds: the protocol's AAD layout number 3.
const AADVersion byte = 0x03

// MaxAADSize is the largest AAD, in bytes, that AppendAAD and
// AppendAADWithType build (64 KiB). Real AADs are a few hundred bytes at
// most; the cap stops a runaway cache key from producing an unbounded
// authenticated header.
const MaxAADSize = 64 << 10

// Serialization-format tokens. They name the family of the bytes that are
// sealed (the AES-GCM plaintext) and appear both in the AAD and in the
// ByteStorage envelope's format field. They are case-sensitive and form a
// closed registry: the builders in this package refuse any other token.
const (
	// FormatMsgpack names MessagePack-family plaintext (a ByteStorage
	// envelope over MessagePack, or plain MessagePack).
	FormatMsgpack = "msgpack"
	// FormatOrjson names JSON plaintext as written by cachekit-py's orjson
	// serializer.
	FormatOrjson = "orjson"
	// FormatArrow names cachekit-py's Arrow IPC file envelope.
	FormatArrow = "arrow"
)

// The two frozen spellings of the compressed flag. They are protocol
// constants, not a rendering of Go's bool.
const (
	aadTrue  = "True"
	aadFalse = "False"
)

// aadLenPrefix is the size of each component's big-endian length prefix.
const aadLenPrefix = 4

// knownFormat reports whether format is a registry token.
func knownFormat(format string) bool {
	switch format {
	case FormatMsgpack, FormatOrjson, FormatArrow:
		return true
	}
	return false
}

// compressedToken returns the frozen ASCII token for the compressed flag.
func compressedToken(compressed bool) string {
	if compressed {
		return aadTrue
	}
	return aadFalse
}

// AADLen returns the number of bytes AppendAAD appends for these inputs
// (the four-component form), whether or not the inputs are valid.
//
// In this module only the AAD builders call it; it is exported so a caller
// can size a buffer for one AAD before building it.
func AADLen(tenant, cacheKey, format string, compressed bool) int {
	return 1 + 4*aadLenPrefix + len(tenant) + len(cacheKey) + len(format) +
		len(compressedToken(compressed))
}

// aadLenWithType returns the length of the five-component form.
func aadLenWithType(tenant, cacheKey, format string, compressed bool, originalType string) int {
	return AADLen(tenant, cacheKey, format, compressed) + aadLenPrefix + len(originalType)
}

// AppendAAD appends the four-component AAD v0x03 to dst and returns the
// extended slice: the version byte, then tenant, cache key, format token and
// the compressed token ("True" or "False"), each preceded by its length as a
// 4-byte big-endian integer. This is the shape cachekit-ts, cachekit-rs and
// interop mode use.
//
// cacheKey is the full logical backend key, every client-side prefix
// included. tenant must already be resolved (the protocol's implicit tenant
// is the literal "default", never the empty string). Components must be
// non-empty valid UTF-8, format must be a registry token, and the result must
// fit MaxAADSize; otherwise AppendAAD returns dst unchanged and a
// *FormatError with Op "aad". The error never quotes the inputs.
//
// AppendAAD does not allocate when dst has AADLen spare capacity.
func AppendAAD(dst []byte, tenant, cacheKey, format string, compressed bool) ([]byte, error) {
	if err := checkAADInputs(tenant, cacheKey, format); err != nil {
		return dst, err
	}
	n := AADLen(tenant, cacheKey, format, compressed)
	if n > MaxAADSize || n < 0 {
		return dst, formatErr("aad", ErrTooLarge, "aad would exceed 64 KiB")
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, AADVersion)
	dst = appendAADComponent(dst, tenant)
	dst = appendAADComponent(dst, cacheKey)
	dst = appendAADComponent(dst, format)
	dst = appendAADComponent(dst, compressedToken(compressed))
	return dst, nil
}

// AppendAADWithType appends the five-component AAD v0x03: the four
// components of AppendAAD followed by the length-prefixed originalType hint,
// the shape every encrypted cachekit-py auto-mode entry carries. Interop
// mode never uses it. originalType must be non-empty valid UTF-8; the other
// rules and the error behaviour are those of AppendAAD. It does not allocate
// when dst has enough spare capacity.
//
// No code in this module writes it: the Client never writes auto-mode
// entries. It is exported so the protocol vectors' five-component rows are
// checked byte for byte and a tool can open cachekit-py auto-mode entries.
func AppendAADWithType(dst []byte, tenant, cacheKey, format string, compressed bool, originalType string) ([]byte, error) {
	if err := checkAADInputs(tenant, cacheKey, format); err != nil {
		return dst, err
	}
	if err := checkAADComponent("original type", originalType); err != nil {
		return dst, err
	}
	n := aadLenWithType(tenant, cacheKey, format, compressed, originalType)
	if n > MaxAADSize || n < 0 {
		return dst, formatErr("aad", ErrTooLarge, "aad would exceed 64 KiB")
	}
	// The four leading components are AppendAAD's. Its checks repeat the
	// ones above and pass; this path is rare, AppendAAD's is hot.
	out, err := AppendAAD(slices.Grow(dst, n), tenant, cacheKey, format, compressed)
	if err != nil {
		return dst, err
	}
	return appendAADComponent(out, originalType), nil
}

// checkAADInputs validates the components shared by both AAD shapes.
func checkAADInputs(tenant, cacheKey, format string) error {
	if goodComponent(tenant) && goodComponent(cacheKey) && knownFormat(format) {
		return nil
	}
	// Something is wrong: find the first bad input, in the documented order.
	if err := checkAADComponent("tenant", tenant); err != nil {
		return err
	}
	if err := checkAADComponent("cache key", cacheKey); err != nil {
		return err
	}
	if !knownFormat(format) {
		return formatErr("aad", ErrMalformed, "format is not a registered token")
	}
	return nil
}

// goodComponent reports whether checkAADComponent accepts s.
func goodComponent(s string) bool {
	return len(s) != 0 && len(s) <= MaxAADSize && validUTF8(s)
}

// checkAADComponent rejects empty, oversized or non-UTF-8 components. what
// names the component in the error; the value itself is never quoted.
func checkAADComponent(what, s string) error {
	switch {
	case len(s) == 0:
		return formatErr("aad", ErrMalformed, what+" is empty")
	case len(s) > MaxAADSize:
		return formatErr("aad", ErrTooLarge, what+" would exceed 64 KiB")
	case !validUTF8(s):
		return formatErr("aad", ErrMalformed, what+" is not valid UTF-8")
	}
	return nil
}

// validUTF8 is utf8.ValidString with a cheaper answer for the ASCII
// strings tenants and cache keys nearly always are: the bytes are ORed
// together eight at a time, and only a set high bit sends the string to the
// full validation.
func validUTF8(s string) bool {
	var words uint64
	i := 0
	for ; len(s)-i >= 8; i += 8 {
		w := s[i : i+8]
		words |= uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
			uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
	}
	// At most seven bytes remain: take them as four, two and one.
	if len(s)-i >= 4 {
		w := s[i : i+4]
		words |= uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24
		i += 4
	}
	if len(s)-i >= 2 {
		w := s[i : i+2]
		words |= uint64(w[0]) | uint64(w[1])<<8
		i += 2
	}
	if i < len(s) {
		words |= uint64(s[i])
	}
	if words&0x8080808080808080 == 0 {
		return true
	}
	return utf8.ValidString(s)
}

// appendAADComponent appends one length-prefixed component. Callers have
// already bounded len(s) by MaxAADSize, so the uint32 conversion is exact.
func appendAADComponent(dst []byte, s string) []byte {
	if uint64(len(s)) > math.MaxUint32 {
		// Unreachable: checkAADComponent caps components at MaxAADSize.
		return dst
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}

// AppendAADKey is AppendAAD for a cache key given in two parts, a
// client-side prefix and the caller's key, whose concatenation is the cache
// key the AAD binds. It appends exactly the bytes of
// AppendAAD(dst, tenant, keyPrefix+key, format, compressed) without building
// the joined string, so a client with a key prefix still builds its AAD
// without allocating. Each part must be valid UTF-8 on its own and the
// joined key must not be empty.
//
// The Client builds its AADs with AADTemplate, this function precomputed;
// AppendAADKey is the reference the template is tested against, and the
// one-off form for callers that build a single AAD.
func AppendAADKey(dst []byte, tenant, keyPrefix, key, format string, compressed bool) ([]byte, error) {
	if keyPrefix == "" {
		return AppendAAD(dst, tenant, key, format, compressed)
	}
	if err := checkAADInputs(tenant, keyPrefix, format); err != nil {
		return dst, err
	}
	if key != "" {
		if err := checkAADComponent("cache key", key); err != nil {
			return dst, err
		}
	}
	n := AADLen(tenant, keyPrefix, format, compressed) + len(key)
	if n > MaxAADSize || n < 0 {
		return dst, formatErr("aad", ErrTooLarge, "aad would exceed 64 KiB")
	}
	dst = slices.Grow(dst, n)
	dst = append(dst, AADVersion)
	dst = appendAADComponent(dst, tenant)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(keyPrefix)+len(key)))
	dst = append(dst, keyPrefix...)
	dst = append(dst, key...)
	dst = appendAADComponent(dst, format)
	dst = appendAADComponent(dst, compressedToken(compressed))
	return dst, nil
}

// AADTemplate builds the AAD v0x03 of many cache keys that share a tenant,
// a key prefix, a format token and a compressed flag, as a cache client's
// keys do. NewAADTemplate validates and encodes the shared components once;
// Append then validates only the key, so building a client's AAD no longer
// re-checks its tenant on every call. Append appends exactly the bytes of
// AppendAADKey for the same inputs. The zero value is not usable: its
// Append returns an error. An AADTemplate is immutable after
// NewAADTemplate and safe for concurrent use.
type AADTemplate struct {
	// front is the version byte, the length-prefixed tenant, a 4-byte
	// placeholder for the cache key's length, and the key prefix.
	front []byte
	// prefixLen is the length of the key prefix at the end of front.
	prefixLen int
	// tail is the length-prefixed format and compressed tokens.
	tail []byte
}

// errAADTemplateZero is Append's error on a zero AADTemplate.
var errAADTemplateZero = formatErr("aad", ErrMalformed, "template was not built by NewAADTemplate")

// NewAADTemplate validates tenant, keyPrefix (which may be empty) and format
// under AppendAADKey's rules and returns the template that builds their
// AAD for any key. On error it returns the zero AADTemplate and the
// *FormatError AppendAADKey reports for those inputs and a valid key. The
// 64 KiB cap on the whole AAD depends on the key, so Append enforces it.
func NewAADTemplate(tenant, keyPrefix, format string, compressed bool) (AADTemplate, error) {
	if err := checkAADComponent("tenant", tenant); err != nil {
		return AADTemplate{}, err
	}
	if keyPrefix != "" {
		if err := checkAADComponent("cache key", keyPrefix); err != nil {
			return AADTemplate{}, err
		}
	}
	if !knownFormat(format) {
		return AADTemplate{}, formatErr("aad", ErrMalformed, "format is not a registered token")
	}
	front := make([]byte, 0, 1+2*aadLenPrefix+len(tenant)+len(keyPrefix))
	front = appendAADComponent(append(front, AADVersion), tenant)
	front = append(front, 0, 0, 0, 0) // the cache key's length, set per call
	front = append(front, keyPrefix...)
	token := compressedToken(compressed)
	tail := make([]byte, 0, 2*aadLenPrefix+len(format)+len(token))
	tail = appendAADComponent(appendAADComponent(tail, format), token)
	return AADTemplate{front: front, prefixLen: len(keyPrefix), tail: tail}, nil
}

// Len returns the number of bytes Append appends for key.
func (t *AADTemplate) Len(key string) int {
	return len(t.front) + len(key) + len(t.tail)
}

// Append appends the AAD binding the template's tenant, format and
// compressed flag to the cache key prefix+key, and returns the extended
// slice. key must be valid UTF-8, and may be empty only when the prefix is
// not; the whole AAD must fit MaxAADSize. Otherwise Append returns dst
// unchanged and the *FormatError AppendAADKey would (Op "aad", never quoting
// the key). It does not allocate when dst has Len(key) spare capacity.
func (t *AADTemplate) Append(dst []byte, key string) ([]byte, error) {
	if len(t.front) == 0 {
		return dst, errAADTemplateZero
	}
	if !goodComponent(key) {
		// The rare paths: checkAADComponent words the error.
		if key != "" {
			return dst, checkAADComponent("cache key", key)
		}
		if t.prefixLen == 0 {
			return dst, formatErr("aad", ErrMalformed, "cache key is empty")
		}
	}
	n := t.Len(key)
	if n > MaxAADSize {
		return dst, formatErr("aad", ErrTooLarge, "aad would exceed 64 KiB")
	}
	dst = slices.Grow(dst, n)
	start := len(dst)
	dst = append(dst, t.front...)
	// n fits MaxAADSize, so the joined key length fits the uint32.
	at := start + len(t.front) - t.prefixLen - aadLenPrefix
	binary.BigEndian.PutUint32(dst[at:at+aadLenPrefix], uint32(t.prefixLen+len(key)))
	dst = append(dst, key...)
	return append(dst, t.tail...), nil
}
