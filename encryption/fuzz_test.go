package encryption

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// fuzzSeeds returns every (sealed, aad) pair of encryption.json sealed under
// the main master key and tenant, plus the interop vector (same key and
// tenant). It fails when there are none.
func fuzzSeeds(f *testing.F) (tenant, keyHex string, seeds [][2][]byte) {
	f.Helper()
	var ef encryptionFile
	vectors.Decode(f, "encryption.json", &ef)
	add := func(rs []sealedRow) {
		for _, r := range rs {
			seeds = append(seeds, [2][]byte{vectors.Hex(f, r.CiphertextHex), vectors.Hex(f, r.AADHex)})
		}
	}
	add(ef.Vectors)
	add(ef.AADRejectVectors)
	for _, r := range ef.DecryptedContainer.Vectors {
		add([]sealedRow{r.sealedRow})
	}
	for _, r := range vectors.Group[interopEncRow](f, "interop-mode.json", "encryption_vectors") {
		if r.MasterKeyHex == ef.MasterKeyHex && r.TenantID == ef.TenantID {
			add([]sealedRow{r.sealedRow})
		}
	}
	if len(seeds) == 0 {
		f.Fatal("no fuzz seeds: the vector files yielded nothing")
	}
	return ef.TenantID, ef.MasterKeyHex, seeds
}

// FuzzDecrypt feeds arbitrary sealed values and AADs to DecryptNow. It must
// never panic and may only succeed (with exactly len-Overhead bytes), fail
// authentication, or refuse a value shorter than Overhead.
func FuzzDecrypt(f *testing.F) {
	tenant, keyHex, seeds := fuzzSeeds(f)
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	m := staticManager(f, tenant, keyHex)
	f.Fuzz(func(t *testing.T, sealed, aad []byte) {
		out, d, err := m.DecryptNow(nil, sealed, aad)
		if d != nil {
			t.Fatal("ready manager deferred")
		}
		var fe *LengthError
		switch {
		case err == nil:
			if len(out) != len(sealed)-Overhead {
				t.Fatalf("%d bytes out of a %d-byte sealed value", len(out), len(sealed))
			}
		case errors.Is(err, ErrAuthFailed):
			if len(sealed) < Overhead || out != nil {
				t.Fatalf("auth failure on %d bytes with output %v", len(sealed), out != nil)
			}
		case errors.As(err, &fe):
			if len(sealed) >= Overhead || out != nil {
				t.Fatalf("format error on %d bytes", len(sealed))
			}
		default:
			t.Fatalf("unexpected error %T %v", err, err)
		}
	})
}

// FuzzRoundTrip seals arbitrary plaintexts under arbitrary AADs and checks
// they open to the same bytes, and not under a changed AAD.
func FuzzRoundTrip(f *testing.F) {
	tenant, keyHex, seeds := fuzzSeeds(f)
	m := staticManager(f, tenant, keyHex)
	for _, s := range seeds {
		pt, _, err := m.DecryptNow(nil, s[0], s[1])
		if err == nil {
			f.Add(pt, s[1])
		}
	}
	f.Fuzz(func(t *testing.T, pt, aad []byte) {
		sealed, _, err := m.EncryptNow(nil, pt, aad)
		if err != nil || len(sealed) != len(pt)+Overhead {
			t.Fatalf("EncryptNow: %v", err)
		}
		got, _, err := m.DecryptNow(nil, sealed, aad)
		if err != nil || !bytes.Equal(got, pt) {
			t.Fatalf("round trip: %v", err)
		}
		if _, _, err := m.DecryptNow(nil, sealed, append(bytes.Clone(aad), 0)); !errors.Is(err, ErrAuthFailed) {
			t.Fatalf("longer AAD: %v", err)
		}
	})
}

// FuzzParseMasterKeyHex: any string either parses to 32 bytes that are the
// hex it came from (and not all zero) or fails with a *ConfigError that
// does not repeat the input; never a panic. The list form follows the same
// rule entry by entry.
func FuzzParseMasterKeyHex(f *testing.F) {
	for _, s := range []string{strings.Repeat("ab", KeySize), strings.Repeat("00", KeySize), strings.Repeat("AB", KeySize),
		"zz" + strings.Repeat("ab", KeySize-1), "", "0", strings.Repeat("ab", KeySize) + "," + strings.Repeat("cd", KeySize)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseMasterKeyHex(s)
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) || k != nil {
				t.Fatalf("ParseMasterKeyHex error %v (%T), key %x", err, err, k)
			}
			if len(s) >= 8 && strings.Contains(err.Error(), s) {
				t.Fatalf("the error repeats the input: %v", err)
			}
		} else if len(k) != KeySize || !strings.EqualFold(hex.EncodeToString(k), s) || bytes.Equal(k, make([]byte, KeySize)) {
			t.Fatalf("ParseMasterKeyHex(%q) = %x", s, k)
		}
		keys, err := ParseMasterKeyListHex(s)
		if err == nil {
			for _, k := range keys {
				if len(k) != KeySize {
					t.Fatalf("list entry of %d bytes", len(k))
				}
			}
		} else if keys != nil {
			t.Fatal("keys returned with an error")
		}
	})
}

// FuzzParseMasterKeyListHex feeds arbitrary CACHEKIT_PREVIOUS_MASTER_KEYS
// values to ParseMasterKeyListHex. It must never panic; on success it
// returns one valid 32-byte key per comma-separated entry (none for a
// blank list); on failure the error matches ErrInvalidConfig and repeats
// no entry of the list (it names the entry by position only).
func FuzzParseMasterKeyListHex(f *testing.F) {
	var ef encryptionFile
	vectors.Decode(f, "encryption.json", &ef)
	if ef.MasterKeyHex == "" {
		f.Fatal("no fuzz seed: encryption.json has no master key")
	}
	k := ef.MasterKeyHex
	for _, s := range []string{k, k + "," + k, " " + k + " , " + strings.ToUpper(k), "", " ,", k + ",",
		k[:63], k + "0", strings.Repeat("0", 64), strings.Repeat("zz", 32), k + "," + k[:10] + "secret"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, list string) {
		keys, err := ParseMasterKeyListHex(list)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v does not match ErrInvalidConfig", err)
			}
			for _, part := range strings.Split(list, ",") {
				if p := strings.TrimSpace(part); len(p) >= 8 && strings.Contains(err.Error(), p) {
					t.Fatalf("the error repeats an entry of the list: %q", err.Error())
				}
			}
			return
		}
		want := 0
		if strings.TrimSpace(list) != "" {
			want = len(strings.Split(list, ","))
		}
		if len(keys) != want {
			t.Fatalf("%d keys from %d entries", len(keys), want)
		}
		for _, key := range keys {
			if len(key) != KeySize || bytes.Equal(key, make([]byte, KeySize)) {
				t.Fatalf("accepted a key of %d bytes (or all zero)", len(key))
			}
		}
	})
}
