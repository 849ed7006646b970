package encryption

import (
	"bytes"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/vectors"
)

type interopAADRow struct {
	Name     string `json:"name"`
	TenantID string `json:"tenant_id"`
	CacheKey string `json:"cache_key"`
	AADHex   string `json:"aad_hex"`
}

type interopEncRow struct {
	sealedRow
	MasterKeyHex   string `json:"master_key_hex"`
	TenantID       string `json:"tenant_id"`
	FingerprintHex string `json:"derived_key_fingerprint_hex"`
	NonceHex       string `json:"nonce_hex"`
}

// TestVectorsInteropEncryption: interop-mode.json's encryption row opens
// under its tenant and key, its nonce is the sealed value's first 12 bytes,
// and it reseals (IOP-35).
func TestVectorsInteropEncryption(t *testing.T) {
	for _, row := range vectors.Group[interopEncRow](t, "interop-mode.json", "encryption_vectors") {
		t.Run(row.Name, func(t *testing.T) {
			m := staticManager(t, row.TenantID, row.MasterKeyHex)
			if got := m.Stats().Fingerprint; got != row.FingerprintHex {
				t.Fatalf("fingerprint %s, want %s", got, row.FingerprintHex)
			}
			sealed := vectors.Hex(t, row.CiphertextHex)
			if !bytes.Equal(sealed[:NonceSize], vectors.Hex(t, row.NonceHex)) {
				t.Fatal("vector's nonce is not the sealed value's first 12 bytes")
			}
			checkOpens(t, m, row.sealedRow, 0)
			checkReseals(t, m, row.sealedRow)
		})
	}
}

// TestVectorsInteropAAD checks each pinned interop AAD at this layer: the
// AAD the interop encryption vector was sealed under, so it opens that
// vector, while the same bytes with any one byte changed do not: the
// aad_vectors group of interop-mode.json (IOP-35).
func TestVectorsInteropAAD(t *testing.T) {
	enc := vectors.Group[interopEncRow](t, "interop-mode.json", "encryption_vectors")
	for _, row := range vectors.Group[interopAADRow](t, "interop-mode.json", "aad_vectors") {
		t.Run(row.Name, func(t *testing.T) {
			var match *interopEncRow
			for i := range enc {
				if enc[i].TenantID == row.TenantID && enc[i].CacheKey == row.CacheKey {
					match = &enc[i]
				}
			}
			if match == nil {
				t.Fatal("no encryption vector shares this AAD's tenant and cache key")
			}
			m := staticManager(t, row.TenantID, match.MasterKeyHex)
			aad, sealed := vectors.Hex(t, row.AADHex), vectors.Hex(t, match.CiphertextHex)
			got, _, err := m.DecryptNow(nil, sealed, aad)
			if err != nil || !bytes.Equal(got, vectors.Hex(t, match.PlaintextHex)) {
				t.Fatalf("pinned AAD does not open the interop vector: %v", err)
			}
			for i := range aad {
				bad := bytes.Clone(aad)
				bad[i] ^= 0x01
				checkRejects(t, m, sealed, bad)
			}
		})
	}
}

// TestWycheproofAESGCM runs every 256-bit key, 96-bit IV, 128-bit tag case
// of Wycheproof's AES-GCM file through the open path (and, for valid cases,
// the seal path with the case's IV as the nonce).
func TestWycheproofAESGCM(t *testing.T) {
	n := 0
	for _, tc := range vectors.WycheproofAESGCM256(t) {
		n++
		t.Run(hex.EncodeToString([]byte{byte(tc.TcID >> 8), byte(tc.TcID)}), func(t *testing.T) {
			var key [KeySize]byte
			copy(key[:], tc.Key)
			a, err := newAEAD(&key)
			if err != nil {
				t.Fatal(err)
			}
			iv, aad, msg := tc.IV, tc.AAD, tc.Msg
			sealed := append(append(bytes.Clone(iv), tc.CT...), tc.Tag...)
			got, idx, err := openWith([]*aesGCM{a}, nil, sealed, aad)
			switch tc.Result {
			case "valid":
				if err != nil || idx != 0 || !bytes.Equal(got, msg) {
					t.Fatalf("tc %d (%s): valid case: err=%v", tc.TcID, tc.Comment, err)
				}
				ns := newNonceSource()
				ns.setForTest(beUint64(iv[:8]), uint64(beUint32(iv[8:])))
				resealed, err := seal(a, ns, nil, msg, aad)
				if beUint32(iv[8:]) == counterLimit {
					// A counter our nonces never reach: the reservation must refuse it.
					if !errors.Is(err, ErrNonceExhausted) {
						t.Fatalf("tc %d: counter 0xffffffff was reserved: %v", tc.TcID, err)
					}
					return
				}
				if err != nil || !bytes.Equal(resealed, sealed) {
					t.Fatalf("tc %d: seal differs: %v", tc.TcID, err)
				}
			case "invalid":
				if !errors.Is(err, ErrAuthFailed) || got != nil {
					t.Fatalf("tc %d (%s): invalid case: err=%v", tc.TcID, tc.Comment, err)
				}
			default:
				t.Fatalf("tc %d: unexpected result %q", tc.TcID, tc.Result)
			}
		})
	}
	if n == 0 {
		t.Fatal("no Wycheproof AES-256-GCM cases with 96-bit IVs and 128-bit tags")
	}
}

func beUint64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}

func beUint32(b []byte) uint32 {
	var v uint32
	for _, c := range b[:4] {
		v = v<<8 | uint32(c)
	}
	return v
}
