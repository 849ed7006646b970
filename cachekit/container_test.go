package cachekit

import (
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/vectors"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// TestDecryptedContainerVectorsThroughClient: encryption.json
// decrypted_container: each plaintext is a container the reader is not
// configured for. The client picks its container from its options, never
// from the bytes (ENC-2), and a mismatch hard-fails (ENC-3): an error, and
// for the plain reader the envelope refused as another SDK's container
// (WIRE-21), never unwrapped to its inner value.
// The interop rows' trailing bytes are refused (IOP-19).
func TestDecryptedContainerVectorsThroughClient(t *testing.T) {
	t.Parallel()
	type row struct {
		Name          string `json:"name"`
		Reader        string `json:"reader"`
		CacheKey      string `json:"cache_key"`
		CiphertextHex string `json:"ciphertext_hex"`
		PlaintextHex  string `json:"plaintext_hex"`
		Outcome       string `json:"outcome"`
	}
	var top struct {
		MasterKeyHex string `json:"master_key_hex"`
		TenantID     string `json:"tenant_id"`
		Container    struct {
			Vectors []row `json:"vectors"`
		} `json:"decrypted_container"`
	}
	vectors.Decode(t, "encryption.json", &top)
	if len(top.Container.Vectors) == 0 {
		t.Fatal("decrypted_container yields no rows")
	}
	_, rdb := withRedis(t)
	key, err := encryption.ParseMasterKeyHex(top.MasterKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range top.Container.Vectors {
		t.Run(r.Name, func(t *testing.T) {
			opts := Options{Redis: rdb, L1MaxBytes: 1 << 20,
				Encryption: &encryption.Config{MasterKey: key, Tenant: top.TenantID}}
			switch r.Reader {
			case "plain_msgpack":
				opts.DisableCompression = true
			case "interop":
				opts.Interop = true
			case "bytestorage_envelope":
			case "arrow_checksummed", "orjson_checksummed":
				// cachekit-py containers: no Go client can be configured
				// with that reader. A msgpack client rebuilds a "msgpack"
				// AAD, so the entry must fail to authenticate.
				r.Outcome = "auth"
			default:
				t.Fatalf("unknown reader %q", r.Reader)
			}
			ct, _ := hex.DecodeString(r.CiphertextHex)
			if err := rdb.Set(bg, r.CacheKey, ct, time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			c := newClient(t, opts)
			var got any
			err := c.Get(bg, r.CacheKey, &got)
			switch r.Outcome {
			case "auth":
				if !errors.Is(err, ErrAuthFailed) {
					t.Fatalf("got %#v, %v; want ErrAuthFailed", got, err)
				}
			case "error":
				if err == nil {
					t.Fatalf("read %#v, want an error", got)
				}
			case "not_unwrapped":
				// Anything but the inner value passes the row; this reader
				// refuses the envelope as another SDK's container (WIRE-21)
				// rather than return its four fields as a value.
				if !errors.Is(err, protocol.ErrForeignContainer) || !errors.Is(err, ErrNotFound) {
					t.Fatalf("got %#v, %v; want the envelope refused as a foreign container, read as a miss", got, err)
				}
			default:
				t.Fatalf("unknown outcome %q", r.Outcome)
			}
			if err != nil && c.Stats().L1Bytes != 0 {
				t.Fatal("a refused entry was admitted to L1")
			}
		})
	}
}
