package encryption

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// The salt layout the protocol gives byte by byte, for domain "cache" and
// tenant "tenant-123".
func TestSaltLayout(t *testing.T) {
	want := vectors.Hex(t, "63616368656b69745f76315f"+"05"+"6361636865"+"000a"+"74656e616e742d313233")
	if got := appendSalt(nil, "cache", "tenant-123"); !bytes.Equal(got, want) {
		t.Fatalf("salt = %x, want %x", got, want)
	}
	// Length prefixes keep shifted splits apart.
	if bytes.Equal(appendSalt(nil, "foo", "bar"), appendSalt(nil, "foob", "ar")) {
		t.Fatal("salts of (foo, bar) and (foob, ar) collide")
	}
	// The tenant length is two bytes big-endian: 0x0400 for the maximum.
	long := strings.Repeat("t", MaxTenantSize)
	s := appendSalt(nil, DomainEncryption, long)
	off := len(saltPrefix) + 1 + len(DomainEncryption)
	if s[off] != 0x04 || s[off+1] != 0x00 || len(s) != off+2+MaxTenantSize {
		t.Fatalf("tenant length prefix %x, salt length %d", s[off:off+2], len(s))
	}
}

func TestDomainsAreIndependent(t *testing.T) {
	master := bytes.Repeat([]byte{0x61}, KeySize)
	seen := map[[KeySize]byte]string{}
	for _, tenant := range []string{"default", "a", "b"} {
		for _, domain := range []string{DomainEncryption, DomainAuthentication, DomainCacheKeys} {
			var k [KeySize]byte
			if err := deriveKey(&k, master, domain, tenant); err != nil {
				t.Fatal(err)
			}
			if prev, dup := seen[k]; dup {
				t.Fatalf("%s/%s derives the same key as %s", domain, tenant, prev)
			}
			seen[k] = domain + "/" + tenant
		}
	}
}

func TestTenantBounds(t *testing.T) {
	master := bytes.Repeat([]byte{0x61}, KeySize)
	cases := []struct {
		name   string
		tenant string
		ok     bool
	}{
		{"empty", "", false},
		{"one byte", "x", true},
		{"max", strings.Repeat("x", MaxTenantSize), true},
		{"max+1", strings.Repeat("x", MaxTenantSize+1), false},
		{"u16 max", strings.Repeat("x", 65535), false},
		{"invalid utf8", "ab\xff", false},
		{"multibyte", "ténant-東京", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Fingerprint(master, c.tenant)
			if c.ok != (err == nil) {
				t.Fatalf("Fingerprint err = %v, want ok=%v", err, c.ok)
			}
			if !c.ok && !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("err %v is not ErrInvalidConfig", err)
			}
			if !c.ok && c.tenant != "" && strings.Contains(err.Error(), c.tenant) {
				t.Fatal("error message contains the tenant")
			}
			// Config.Tenant: empty means the default, the rest as above.
			_, err = NewManager(Config{MasterKey: master, Tenant: c.tenant})
			if want := c.ok || c.tenant == ""; want != (err == nil) {
				t.Fatalf("NewManager err = %v, want ok=%v", err, want)
			}
		})
	}
}

// TestVectorsMasterKeyInput: each master_key_input accept row parses to
// hex_decode(string) (PRE-16, PRE-17, PRE-18), derives its fingerprint and
// opens its entry under the default tenant; each hex reject row is a
// *ConfigError that repeats no key; each raw reject row is refused by the
// raw-bytes entry point, current or previous (PRE-26).
func TestVectorsMasterKeyInput(t *testing.T) {
	f := loadEncryptionFile(t)
	in := f.MasterKeyInput
	if in.TenantID != DefaultTenant {
		t.Fatalf("master_key_input tenant %q, want %q", in.TenantID, DefaultTenant)
	}
	t.Run("accept", func(t *testing.T) {
		for _, row := range rows(t, "master_key_input.accept_vectors", in.AcceptVectors) {
			t.Run(row.Name, func(t *testing.T) {
				key, err := ParseMasterKeyHex(row.MasterKeyHex)
				if err != nil {
					t.Fatalf("ParseMasterKeyHex refused an accept row: %v", err)
				}
				if !bytes.Equal(key, vectors.Hex(t, row.MasterKeyHex)) {
					t.Fatal("ParseMasterKeyHex decoded other bytes than hex decoding does")
				}
				fp, err := Fingerprint(key, DefaultTenant)
				if err != nil || hex.EncodeToString(fp[:]) != row.FingerprintHex {
					t.Fatalf("Fingerprint = %x, %v; want %s", fp, err, row.FingerprintHex)
				}
				m, err := NewManager(Config{MasterKey: key}) // no tenant: the default
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				clear(key) // NewManager copied it
				if m.Stats().Fingerprint != row.FingerprintHex {
					t.Fatalf("Manager fingerprint %s, want %s", m.Stats().Fingerprint, row.FingerprintHex)
				}
				checkOpens(t, m, row.sealedRow, 0)
				checkReseals(t, m, row.sealedRow)
				// Uppercase hex is the same key.
				up, err := ParseMasterKeyHex(strings.ToUpper(row.MasterKeyHex))
				if err != nil || !bytes.Equal(up, vectors.Hex(t, row.MasterKeyHex)) {
					t.Fatalf("uppercase form: %v", err)
				}
			})
		}
	})
	t.Run("reject", func(t *testing.T) {
		for _, row := range rows(t, "master_key_input.reject_vectors", in.RejectVectors) {
			t.Run(row.Name, func(t *testing.T) {
				key, err := ParseMasterKeyHex(row.MasterKeyHex)
				var ce *ConfigError
				if key != nil || !errors.As(err, &ce) {
					t.Fatalf("ParseMasterKeyHex = %d bytes, %v; want nil and a *ConfigError", len(key), err)
				}
				assertNoSecret(t, err.Error(), row.MasterKeyHex)
			})
		}
	})
	t.Run("raw_reject", func(t *testing.T) {
		for _, row := range rows(t, "master_key_input.raw_reject_vectors", in.RawRejectVectors) {
			t.Run(row.Name, func(t *testing.T) {
				raw := vectors.Hex(t, row.RawKeyHex)
				_, err := NewManager(Config{MasterKey: raw})
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("NewManager(raw) err = %v, want ErrInvalidConfig", err)
				}
				_, err2 := NewManager(Config{MasterKey: bytes.Repeat([]byte{1}, KeySize), PreviousKeys: [][]byte{raw}})
				if !errors.Is(err2, ErrInvalidConfig) {
					t.Fatalf("NewManager(previous raw) err = %v, want ErrInvalidConfig", err2)
				}
				if _, err3 := Fingerprint(raw, DefaultTenant); !errors.Is(err3, ErrInvalidConfig) {
					t.Fatalf("Fingerprint(raw) err = %v, want ErrInvalidConfig", err3)
				}
				assertNoSecret(t, err.Error(), row.RawKeyHex)
				assertNoSecret(t, err.Error(), string(raw))
			})
		}
	})
}

// assertNoSecret fails when msg contains any 8-character window of secret.
func assertNoSecret(t *testing.T, msg, secret string) {
	t.Helper()
	for i := 0; i+8 <= len(secret); i++ {
		if strings.Contains(msg, secret[i:i+8]) {
			t.Fatalf("error message reveals key material: %q", msg)
		}
	}
}

// TestParseMasterKeyHexEveryLength: only exactly 64 hex digits parse, every
// shorter or longer length and every non-hex byte at any position is refused
// (PRE-23).
func TestParseMasterKeyHexEveryLength(t *testing.T) {
	good := strings.Repeat("a1", KeySize)
	for n := 0; n <= len(good)+2; n++ {
		s := (good + "a1")[:n]
		key, err := ParseMasterKeyHex(s)
		if (n == 2*KeySize) != (err == nil) {
			t.Fatalf("length %d: err = %v", n, err)
		}
		if err == nil && len(key) != KeySize {
			t.Fatalf("length %d: %d bytes", n, len(key))
		}
	}
	// Every single-character substitution with a non-hex byte is refused.
	for pos := range len(good) {
		for _, c := range []byte{'g', 'G', ' ', '+', '-', 'x', 0, 0xff, '\n'} {
			s := []byte(good)
			s[pos] = c
			if _, err := ParseMasterKeyHex(string(s)); err == nil {
				t.Fatalf("accepted byte %#x at %d", c, pos)
			}
		}
	}
}

func TestFingerprintIsOfDerivedKeyNotMaster(t *testing.T) {
	master := bytes.Repeat([]byte{0x61}, KeySize)
	var m [KeySize]byte
	copy(m[:], master)
	fp, err := Fingerprint(master, "cross-sdk-test")
	if err != nil {
		t.Fatal(err)
	}
	if fp == fingerprintOf(&m) {
		t.Fatal("Fingerprint fingerprints the master key, not the derived key")
	}
	if hex.EncodeToString(fp[:]) != "96179a9bc881aa7ca83f04b78a66afd3" {
		t.Fatalf("fingerprint %x", fp)
	}
}

// TestAllZeroKeyRefused: a key of 32 zero bytes is a placeholder, refused
// wherever a master key enters (raw, hex, previous keys).
func TestAllZeroKeyRefused(t *testing.T) {
	zero := make([]byte, KeySize)
	if _, err := NewManager(Config{MasterKey: zero}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("NewManager(all-zero key) = %v, want ErrInvalidConfig", err)
	}
	good := bytes.Repeat([]byte{7}, KeySize)
	if _, err := NewManager(Config{MasterKey: good, PreviousKeys: [][]byte{zero}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("all-zero previous key: %v, want ErrInvalidConfig", err)
	}
	if _, err := ParseMasterKeyHex(strings.Repeat("00", KeySize)); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("ParseMasterKeyHex(zeros) = %v, want ErrInvalidConfig", err)
	}
}

// TestParseMasterKeyListHex: CACHEKIT_PREVIOUS_MASTER_KEYS parses to one key
// per comma-separated entry, a blank list to none, and a bad entry is an
// error naming its position, never its text (ENC-7).
func TestParseMasterKeyListHex(t *testing.T) {
	a, b := strings.Repeat("a1", KeySize), strings.Repeat("B2", KeySize)
	keys, err := ParseMasterKeyListHex(" " + a + " , " + b)
	if err != nil || len(keys) != 2 || keys[0][0] != 0xa1 || keys[1][0] != 0xb2 {
		t.Fatalf("ParseMasterKeyListHex = %x, %v", keys, err)
	}
	if keys, err := ParseMasterKeyListHex("  "); keys != nil || err != nil {
		t.Fatalf("blank list = %v, %v; want no key", keys, err)
	}
	_, err = ParseMasterKeyListHex(a + ",xyz")
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "entry 2") || strings.Contains(err.Error(), "xyz") {
		t.Fatalf("bad second entry: %v", err)
	}
}
