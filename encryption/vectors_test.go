package encryption

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

// sealedRow is the shape shared by every row that carries a sealed value.
type sealedRow struct {
	Name          string `json:"name"`
	PlaintextHex  string `json:"plaintext_hex"`
	AADHex        string `json:"aad_hex"`
	CiphertextHex string `json:"ciphertext_hex"`
	CacheKey      string `json:"cache_key"`
}

type keyringEntry struct {
	ID             string `json:"id"`
	MasterKeyHex   string `json:"master_key_hex"`
	FingerprintHex string `json:"derived_key_fingerprint_hex"`
}

type keyringVector struct {
	sealedRow
	EncryptedWith  string `json:"encrypted_with"`
	FingerprintHex string `json:"key_fingerprint_hex"`
}

type keyringConfigRow struct {
	Name        string   `json:"name"`
	CurrentHex  string   `json:"current_master_key_hex"`
	PreviousHex []string `json:"decrypt_only_master_keys_hex"`
	Verdict     string   `json:"verdict"`
}

type containerRow struct {
	sealedRow
	Reader  string `json:"reader"`
	Outcome string `json:"outcome"`
}

type masterKeyAcceptRow struct {
	sealedRow
	MasterKeyHex   string `json:"master_key_hex"`
	FingerprintHex string `json:"derived_key_fingerprint_hex"`
}

type masterKeyRejectRow struct {
	Name         string `json:"name"`
	MasterKeyHex string `json:"master_key_hex"`
	RawKeyHex    string `json:"raw_key_hex"`
}

// encryptionFile is testdata/protocol/encryption.json.
type encryptionFile struct {
	Version        string `json:"version"`
	MasterKeyHex   string `json:"master_key_hex"`
	TenantID       string `json:"tenant_id"`
	FingerprintHex string `json:"derived_key_fingerprint_hex"`
	Keyring        struct {
		TenantID      string          `json:"tenant_id"`
		Entries       []keyringEntry  `json:"entries"`
		Vectors       []keyringVector `json:"vectors"`
		Configuration struct {
			Vectors []keyringConfigRow `json:"vectors"`
		} `json:"configuration"`
	} `json:"keyring"`
	Vectors            []sealedRow `json:"vectors"`
	AADRejectVectors   []sealedRow `json:"aad_reject_vectors"`
	DecryptedContainer struct {
		Vectors []containerRow `json:"vectors"`
	} `json:"decrypted_container"`
	DefaultTenant struct {
		TenantID       string      `json:"tenant_id"`
		FingerprintHex string      `json:"derived_key_fingerprint_hex"`
		Vectors        []sealedRow `json:"vectors"`
	} `json:"default_tenant"`
	MasterKeyInput struct {
		TenantID         string               `json:"tenant_id"`
		AcceptVectors    []masterKeyAcceptRow `json:"accept_vectors"`
		RejectVectors    []masterKeyRejectRow `json:"reject_vectors"`
		RawRejectVectors []masterKeyRejectRow `json:"raw_reject_vectors"`
	} `json:"master_key_input"`
}

func loadEncryptionFile(t *testing.T) *encryptionFile {
	t.Helper()
	var f encryptionFile
	vectors.Decode(t, "encryption.json", &f)
	return &f
}

// rows fails the test when a vector group is empty: a group that yields no
// cases must never pass silently.
func rows[T any](t *testing.T, group string, rs []T) []T {
	t.Helper()
	if len(rs) == 0 {
		t.Fatalf("encryption.json/%s yields zero rows", group)
	}
	return rs
}

// staticManager builds a ready Manager from hex master keys.
func staticManager(t testing.TB, tenant, currentHex string, previousHex ...string) *Manager {
	t.Helper()
	cfg := Config{MasterKey: vectors.Hex(t, currentHex), Tenant: tenant}
	for _, p := range previousHex {
		cfg.PreviousKeys = append(cfg.PreviousKeys, vectors.Hex(t, p))
	}
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatalf("NewManager: %v", err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// checkOpens asserts that row decrypts to its plaintext through both the
// Now path and the general path, with the expected keyring index.
func checkOpens(t *testing.T, m *Manager, row sealedRow, wantIndex int) {
	t.Helper()
	sealed, aad, want := vectors.Hex(t, row.CiphertextHex), vectors.Hex(t, row.AADHex), vectors.Hex(t, row.PlaintextHex)
	got, info, d, err := m.DecryptNowInfo(nil, sealed, aad)
	if d != nil || err != nil {
		t.Fatalf("DecryptNowInfo: deferred=%v err=%v", d != nil, err)
	}
	if !bytes.Equal(got, want) || info.KeyIndex != wantIndex {
		t.Fatalf("DecryptNowInfo: plaintext match=%v index=%d, want index %d", bytes.Equal(got, want), info.KeyIndex, wantIndex)
	}
	got, idx, err := m.DecryptIndex(context.Background(), nil, sealed, aad)
	if err != nil || !bytes.Equal(got, want) || idx != wantIndex {
		t.Fatalf("DecryptIndex: err=%v match=%v index=%d", err, bytes.Equal(got, want), idx)
	}
}

// checkReseals asserts that sealing row's plaintext with row's nonce,
// positioned through the real reservation path, reproduces row's bytes.
func checkReseals(t *testing.T, m *Manager, row sealedRow) {
	t.Helper()
	sealed, aad, pt := vectors.Hex(t, row.CiphertextHex), vectors.Hex(t, row.AADHex), vectors.Hex(t, row.PlaintextHex)
	m.setNonceForTest(binary.BigEndian.Uint64(sealed[:8]), uint64(binary.BigEndian.Uint32(sealed[8:NonceSize])))
	got, d, err := m.EncryptNow(make([]byte, 0, len(pt)+Overhead), pt, aad)
	if d != nil || err != nil {
		t.Fatalf("EncryptNow: deferred=%v err=%v", d != nil, err)
	}
	if !bytes.Equal(got, sealed) {
		t.Fatalf("re-encryption differs from the vector's ciphertext")
	}
}

// checkRejects asserts an opaque authentication failure with no output.
func checkRejects(t *testing.T, m *Manager, sealed, aad []byte) {
	t.Helper()
	got, d, err := m.DecryptNow(nil, sealed, aad)
	if d != nil || !errors.Is(err, ErrAuthFailed) || got != nil {
		t.Fatalf("DecryptNow: deferred=%v err=%v out=%d bytes, want ErrAuthFailed and nil", d != nil, err, len(got))
	}
}

func TestVectorsMain(t *testing.T) {
	f := loadEncryptionFile(t)
	m := staticManager(t, f.TenantID, f.MasterKeyHex)
	if got := m.Stats().Fingerprint; got != f.FingerprintHex {
		t.Fatalf("derived key fingerprint %s, want %s", got, f.FingerprintHex)
	}
	for _, row := range rows(t, "vectors", f.Vectors) {
		t.Run(row.Name, func(t *testing.T) {
			checkOpens(t, m, row, 0)
			checkReseals(t, m, row)
		})
	}
}

// TestVectorsAADReject: every aad_reject_vectors row fails authentication
// under the AAD a reader presents, the failure itself asserted: the Manager
// decrypts under the one AAD it is given and tries no other (ENC-1).
func TestVectorsAADReject(t *testing.T) {
	f := loadEncryptionFile(t)
	m := staticManager(t, f.TenantID, f.MasterKeyHex)
	for _, row := range rows(t, "aad_reject_vectors", f.AADRejectVectors) {
		t.Run(row.Name, func(t *testing.T) {
			checkRejects(t, m, vectors.Hex(t, row.CiphertextHex), vectors.Hex(t, row.AADHex))
		})
	}
}

func TestVectorsKeyringEntries(t *testing.T) {
	f := loadEncryptionFile(t)
	for _, e := range rows(t, "keyring.entries", f.Keyring.Entries) {
		t.Run(e.ID, func(t *testing.T) {
			fp, err := Fingerprint(vectors.Hex(t, e.MasterKeyHex), f.Keyring.TenantID)
			if err != nil || hex.EncodeToString(fp[:]) != e.FingerprintHex {
				t.Fatalf("Fingerprint = %x, %v; want %s", fp, err, e.FingerprintHex)
			}
		})
	}
}

func TestVectorsKeyring(t *testing.T) {
	f := loadEncryptionFile(t)
	key := map[string]string{}
	for _, e := range rows(t, "keyring.entries", f.Keyring.Entries) {
		key[e.ID] = e.MasterKeyHex
	}
	tenant := f.Keyring.TenantID
	for _, row := range rows(t, "keyring.vectors", f.Keyring.Vectors) {
		t.Run(row.Name, func(t *testing.T) {
			own, ok := key[row.EncryptedWith]
			if !ok {
				t.Fatalf("unknown key id %q", row.EncryptedWith)
			}
			sealed, aad := vectors.Hex(t, row.CiphertextHex), vectors.Hex(t, row.AADHex)

			// The key that sealed it, alone: decrypts at index 0, and
			// re-encrypts byte for byte.
			alone := staticManager(t, tenant, own)
			if alone.Stats().Fingerprint != row.FingerprintHex {
				t.Fatalf("fingerprint %s, want %s", alone.Stats().Fingerprint, row.FingerprintHex)
			}
			checkOpens(t, alone, row.sealedRow, 0)
			checkReseals(t, alone, row.sealedRow)

			for id, other := range key {
				if id == row.EncryptedWith {
					continue
				}
				// Another key alone refuses it.
				checkRejects(t, staticManager(t, tenant, other), sealed, aad)
				// [other, own] opens it with the previous key, index 1.
				ring := staticManager(t, tenant, other, own)
				checkOpens(t, ring, row.sealedRow, 1)
				if got := ring.Stats().DecryptsByKey; got[1] != 2 || got[0] != 0 {
					t.Fatalf("DecryptsByKey = %v, want two decrypts on entry 1", got)
				}
				// [own, other] opens it with the current key, index 0.
				checkOpens(t, staticManager(t, tenant, own, other), row.sealedRow, 0)
			}
		})
	}
}

// TestVectorsKeyringConfiguration: each keyring.configuration row is
// accepted or refused at load, by the static keyring and by a KeyProvider
// alike: more than three decrypt-only keys (ENC-7) and the current key
// repeated among them, in any case (ENC-9), are configuration errors, never
// truncated.
func TestVectorsKeyringConfiguration(t *testing.T) {
	f := loadEncryptionFile(t)
	for _, row := range rows(t, "keyring.configuration.vectors", f.Keyring.Configuration.Vectors) {
		t.Run(row.Name, func(t *testing.T) {
			var parseErr error
			cur, err := ParseMasterKeyHex(row.CurrentHex)
			if err != nil {
				parseErr = err
			}
			var prev [][]byte
			for _, p := range row.PreviousHex {
				k, err := ParseMasterKeyHex(p)
				if err != nil && parseErr == nil {
					parseErr = err
				}
				prev = append(prev, k)
			}
			staticErr := parseErr
			if staticErr == nil {
				_, staticErr = NewManager(Config{MasterKey: cur, PreviousKeys: prev})
			}
			providerErr := parseErr
			if providerErr == nil {
				m, err := NewManager(Config{Provider: func(context.Context) (Keys, error) {
					return copyKeys(Keys{Current: cur, Previous: prev}), nil
				}})
				if err != nil {
					t.Fatalf("NewManager with provider: %v", err)
				}
				providerErr = m.Warm(context.Background())
				_ = m.Close()
			}
			for path, err := range map[string]error{"static": staticErr, "provider": providerErr} {
				switch row.Verdict {
				case "accept":
					if err != nil {
						t.Errorf("%s: refused an accept row: %v", path, err)
					}
				case "reject":
					var ce *ConfigError
					if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) {
						t.Errorf("%s: got %v, want a *ConfigError", path, err)
					}
				default:
					t.Fatalf("unknown verdict %q", row.Verdict)
				}
			}
		})
	}
}

// TestVectorsDecryptedContainer checks, at this layer, only that each row
// decrypts under its AAD to exactly the plaintext it names: whether the
// container inside is then refused is the client's business (ENC-2: the
// Client picks the container from its options,
// TestDecryptedContainerVectorsThroughClient).
func TestVectorsDecryptedContainer(t *testing.T) {
	f := loadEncryptionFile(t)
	m := staticManager(t, f.TenantID, f.MasterKeyHex)
	for _, row := range rows(t, "decrypted_container.vectors", f.DecryptedContainer.Vectors) {
		t.Run(row.Name, func(t *testing.T) {
			checkOpens(t, m, row.sealedRow, 0)
			checkReseals(t, m, row.sealedRow)
		})
	}
}

// TestVectorsDefaultTenant: a Manager built with no tenant uses "default",
// derives the pinned fingerprint and opens (and reseals) every
// default_tenant row (PRE-27).
func TestVectorsDefaultTenant(t *testing.T) {
	f := loadEncryptionFile(t)
	m := staticManager(t, "", f.MasterKeyHex)
	if m.Tenant() != f.DefaultTenant.TenantID || m.Tenant() != DefaultTenant {
		t.Fatalf("Tenant() = %q, want %q", m.Tenant(), f.DefaultTenant.TenantID)
	}
	if got := m.Stats().Fingerprint; got != f.DefaultTenant.FingerprintHex {
		t.Fatalf("fingerprint %s, want %s", got, f.DefaultTenant.FingerprintHex)
	}
	for _, row := range rows(t, "default_tenant.vectors", f.DefaultTenant.Vectors) {
		t.Run(row.Name, func(t *testing.T) {
			checkOpens(t, m, row, 0)
			checkReseals(t, m, row)
		})
	}
}
