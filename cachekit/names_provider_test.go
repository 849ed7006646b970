package cachekit

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// A name key the KeyProvider supplies (NameKeyFromProvider) names keys as
// Config.NameKey does: a Client of each reads the other's entries, and New
// fails when the provider does.
func TestNameKeyFromProvider(t *testing.T) {
	t.Parallel()
	static, rdb := redisClient(t, namedOpts(testNameKey))
	storeNamed(t, static)

	provided := func(fail bool) Options {
		return Options{Redis: rdb, L1MaxBytes: 1 << 20, KeyPrefix: "app:", Encryption: &encryption.Config{
			Tenant: "t1", NameKeyFromProvider: true,
			Provider: func(context.Context) (encryption.Keys, error) {
				if fail {
					return encryption.Keys{}, errors.New("vault down")
				}
				return encryption.Keys{Current: append([]byte(nil), testKey...), NameKey: append([]byte(nil), testNameKey...)}, nil
			},
		}}
	}
	p := newClient(t, provided(false))
	checkReads(t, p)
	if p.Raw().StoredKey(emailKey) != static.Raw().StoredKey(emailKey) {
		t.Error("the provider's name key names keys differently")
	}
	var pe *ProviderError
	if _, err := New(provided(true)); !errors.As(err, &pe) {
		t.Errorf("New with a failing provider: %v", err)
	}
	interop := provided(false)
	interop.KeyPrefix, interop.Interop = "", true
	if _, err := New(interop); !errors.Is(err, ErrConfig) {
		t.Errorf("interop + NameKeyFromProvider: %v", err)
	}
}

// Whatever else sits at the marker's key is reported as "not a marker",
// never quoted.
func TestNameKeyMarkerNotQuoted(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	if err := rdb.Set(bg, "app:"+NameMarker("t1"), "secret-value-of-someone", 0).Err(); err != nil {
		t.Fatal(err)
	}
	opts := namedOpts(testNameKey)
	opts.Redis = rdb
	_, err := New(opts)
	var mismatch *NameKeyMismatchError
	if !errors.As(err, &mismatch) || mismatch.Found != "not a marker" || strings.Contains(err.Error(), "secret") {
		t.Fatalf("New over a foreign value at the marker: %v", err)
	}
}
