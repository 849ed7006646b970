package cachekit

import (
	"context"
	"errors"
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
