package encryption

import (
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"unicode/utf8"
)

// Key and identity sizes, in bytes.
const (
	// KeySize is the size of a master key and of every derived key: 32 bytes
	// (AES-256).
	KeySize = 32

	// FingerprintSize is the size of a key fingerprint: 16 bytes, the first
	// half of a SHA-256 digest.
	FingerprintSize = 16

	// MaxTenantSize is the longest tenant the protocol admits: 1024 bytes of
	// UTF-8. The salt's u16 length field could hold more, but the protocol
	// caps the tenant salt at 1024 bytes, and a longer tenant would derive
	// keys that no other CacheKit SDK derives.
	MaxTenantSize = 1024

	// DefaultTenant is the tenant used when Config.Tenant is empty. Every
	// CacheKit SDK resolves a missing tenant to this literal, for key
	// derivation and AAD alike.
	DefaultTenant = "default"
)

// Key-derivation domains. Each names one independent 32-byte key derived
// from the same master key and tenant. The Manager uses only
// DomainEncryption; the others exist for byte-compatibility checks and for
// tools.
const (
	DomainEncryption     = "encryption"
	DomainAuthentication = "authentication"
	DomainCacheKeys      = "cache_keys"
)

const (
	saltPrefix       = "cachekit_v1_"
	fingerprintLabel = "key_fingerprint_v1"
	maxDomainSize    = 255 // the domain's length prefix is one byte
)

// appendSalt appends the HKDF salt for (domain, tenant) to dst: the fixed
// prefix, the domain behind a one-byte length, then the tenant behind a
// two-byte big-endian length. The length prefixes keep ("ab", "c") and
// ("a", "bc") apart. Callers validate the lengths first.
func appendSalt(dst []byte, domain, tenant string) []byte {
	dst = append(dst, saltPrefix...)
	dst = append(dst, byte(len(domain)))
	dst = append(dst, domain...)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(tenant)))
	return append(dst, tenant...)
}

// checkTenant refuses a tenant the protocol does not admit: empty, longer
// than MaxTenantSize, or not valid UTF-8 (the AAD carries it as UTF-8, so
// other SDKs could never produce it).
func checkTenant(tenant string) error {
	switch {
	case tenant == "":
		return configErr("Tenant", "must not be empty (leave Config.Tenant empty to get %q)", DefaultTenant)
	case len(tenant) > MaxTenantSize:
		return configErr("Tenant", "is %d bytes, longer than the %d-byte maximum", len(tenant), MaxTenantSize)
	case !utf8.ValidString(tenant):
		return configErr("Tenant", "is not valid UTF-8")
	}
	return nil
}

// checkMasterKey refuses raw key bytes of any length but exactly KeySize,
// and a key of KeySize zero bytes: that is a placeholder (a fresh
// make([]byte, 32)), never a key.
func checkMasterKey(field string, key []byte) error {
	if len(key) != KeySize {
		return configErr(field, "must be exactly %d raw bytes, got %d", KeySize, len(key))
	}
	var or byte
	for _, b := range key {
		or |= b
	}
	if or == 0 {
		return configErr(field, "is all zero bytes: a placeholder, not a key")
	}
	return nil
}

// deriveKey derives the 32-byte key of one domain for one tenant with
// HKDF-SHA256: the master key is the input keying material, the salt is
// appendSalt's, the info is the domain name. The caller owns the result and
// must clear it when done.
func deriveKey(out *[KeySize]byte, masterKey []byte, domain, tenant string) error {
	if err := checkMasterKey("MasterKey", masterKey); err != nil {
		return err
	}
	if err := checkTenant(tenant); err != nil {
		return err
	}
	if domain == "" || len(domain) > maxDomainSize {
		return configErr("domain", "must be 1 to %d bytes, got %d", maxDomainSize, len(domain))
	}
	var saltBuf [len(saltPrefix) + 1 + maxDomainSize + 2 + MaxTenantSize]byte
	salt := appendSalt(saltBuf[:0], domain, tenant)
	k, err := hkdf.Key(sha256.New, masterKey, salt, domain, KeySize)
	if err != nil {
		// Unreachable for a 32-byte output of SHA-256; reported without
		// the cause, which could in principle echo its inputs.
		return configErr("MasterKey", "key derivation failed")
	}
	copy(out[:], k)
	clear(k)
	return nil
}

// fingerprintOf returns SHA-256("key_fingerprint_v1" ‖ key)[:16].
func fingerprintOf(key *[KeySize]byte) [FingerprintSize]byte {
	var buf [len(fingerprintLabel) + KeySize]byte
	copy(buf[:], fingerprintLabel)
	copy(buf[len(fingerprintLabel):], key[:])
	sum := sha256.Sum256(buf[:])
	clear(buf[:])
	var fp [FingerprintSize]byte
	copy(fp[:], sum[:FingerprintSize])
	return fp
}

// Fingerprint returns the fingerprint of the encryption key that masterKey
// derives for tenant: the value other CacheKit SDKs publish to identify a key
// without revealing it. masterKey must be exactly KeySize raw bytes (use
// ParseMasterKeyHex for the hex form) and tenant must be non-empty (pass
// DefaultTenant for the default). Errors are *ConfigError.
func Fingerprint(masterKey []byte, tenant string) ([FingerprintSize]byte, error) {
	var k [KeySize]byte
	defer clear(k[:])
	if err := deriveKey(&k, masterKey, DomainEncryption, tenant); err != nil {
		return [FingerprintSize]byte{}, err
	}
	return fingerprintOf(&k), nil
}

// ParseMasterKeyHex decodes the hex form of a master key (the form of
// CACHEKIT_MASTER_KEY, as `openssl rand -hex 32` prints it): exactly 64 hex
// digits, upper or lower case, making exactly KeySize bytes. Nothing else is
// admitted: no sign, no 0x prefix, no white space anywhere, no odd length,
// no key shorter or longer than 32 bytes. A refused input is reported as a
// *ConfigError that gives its length but never its content.
//
// The caller owns the returned slice and should clear it once a Manager has
// been built from it (NewManager copies it).
func ParseMasterKeyHex(s string) ([]byte, error) { return parseKeyHex("MasterKey", s) }

// ParseNameKeyHex parses a name key (Config.NameKey) from its hex form, the
// form of CACHEKIT_NAME_KEY, under ParseMasterKeyHex's rules; errors name
// the field NameKey and never quote the input.
func ParseNameKeyHex(s string) ([]byte, error) { return parseKeyHex("NameKey", s) }

// parseKeyHex is ParseMasterKeyHex for the key field.
func parseKeyHex(field, s string) ([]byte, error) {
	if len(s) != 2*KeySize {
		return nil, configErr(field, "must be %d hex digits (%d bytes), got %d characters", 2*KeySize, KeySize, len(s))
	}
	key := make([]byte, KeySize)
	for i := range KeySize {
		hi, ok1 := hexDigit(s[2*i])
		lo, ok2 := hexDigit(s[2*i+1])
		if !ok1 || !ok2 {
			clear(key)
			return nil, configErr(field, "must hold only hex digits 0-9, a-f, A-F")
		}
		key[i] = hi<<4 | lo
	}
	if err := checkMasterKey(field, key); err != nil {
		return nil, err
	}
	return key, nil
}

// ParseMasterKeyListHex parses a comma-separated list of hex master keys,
// the form of CACHEKIT_PREVIOUS_MASTER_KEYS: spaces around each entry are
// ignored, and an empty or all-blank list is no key. Each entry must
// satisfy ParseMasterKeyHex; the error names the entry by position (from
// 1), never its content. On error every key parsed so far is zeroed.
func ParseMasterKeyListHex(list string) ([][]byte, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var keys [][]byte
	for i, part := range strings.Split(list, ",") {
		k, err := ParseMasterKeyHex(strings.TrimSpace(part))
		if err != nil {
			for _, k := range keys {
				clear(k)
			}
			var ce *ConfigError
			if errors.As(err, &ce) {
				return nil, configErr("PreviousKeys", "entry %d %s", i+1, ce.Reason)
			}
			return nil, err
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// hexDigit decodes one hex digit of either case; ok is false for any other
// byte.
func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
