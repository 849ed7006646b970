package cachekit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// TestProviderFailureIsNotACorruptEntry: a KeyProvider that fails (a vault
// timeout) while a Client derives its keys makes reads return a
// *ProviderError. The valid entry in Redis is not counted as an open
// failure, not logged as one, and GetOrLoad neither runs its loader nor
// overwrites it; once the provider answers, the same entry reads back.
func TestProviderFailureIsNotACorruptEntry(t *testing.T) {
	t.Parallel()
	w, rdb := redisClient(t, Options{Encryption: encConfig("")})
	mustSet(t, w, "k", "valid")
	var vaultDown atomic.Bool
	vaultDown.Store(true)
	provider := func(context.Context) (encryption.Keys, error) {
		if vaultDown.Load() {
			return encryption.Keys{}, errors.New("vault: timeout")
		}
		return encryption.Keys{Current: append([]byte(nil), testKey...)}, nil
	}
	r := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: &encryption.Config{Provider: provider}})

	_, err := Get[string](bg, r, "k")
	var pe *ProviderError
	var ee *EntryError
	if !errors.As(err, &pe) || errors.As(err, &ee) || errors.Is(err, ErrNotFound) {
		t.Fatalf("Get with the vault down = %v (%T), want a *ProviderError only", err, err)
	}
	loaded := false
	_, err = GetOrLoadTTL(bg, r, "k", time.Minute, func(context.Context) (string, error) { loaded = true; return "overwrite", nil })
	if !errors.As(err, &pe) || loaded {
		t.Fatalf("GetOrLoad with the vault down = %v, loader ran: %v", err, loaded)
	}
	if st := r.Stats(); st.L1OpenFailures+st.L2OpenFailures != 0 {
		t.Fatalf("a provider failure was counted as %d open failures", st.L1OpenFailures+st.L2OpenFailures)
	}
	vaultDown.Store(false)
	if v, err := Get[string](bg, r, "k"); err != nil || v != "valid" {
		t.Fatalf("Get once the vault answers = %q, %v", v, err)
	}
}

// TestProviderBadKeysAreNotACorruptEntry: a provider that answers with keys
// the keyring refuses (a 16-byte key) is a configuration problem, not a bad
// entry: no open failure counted, no reload over the valid entry.
func TestProviderBadKeysAreNotACorruptEntry(t *testing.T) {
	t.Parallel()
	w, rdb := redisClient(t, Options{Encryption: encConfig("")})
	mustSet(t, w, "k", "valid")
	provider := func(context.Context) (encryption.Keys, error) {
		return encryption.Keys{Current: make([]byte, 16)}, nil
	}
	r := newClient(t, Options{Redis: rdb, Encryption: &encryption.Config{Provider: provider}})
	loaded := false
	_, err := GetOrLoadTTL(bg, r, "k", time.Minute, func(context.Context) (string, error) { loaded = true; return "x", nil })
	var ee *EntryError
	if err == nil || errors.As(err, &ee) || loaded || !errors.Is(err, encryption.ErrInvalidConfig) {
		t.Fatalf("GetOrLoad with a provider returning a 16-byte key = %v (loader ran: %v)", err, loaded)
	}
	if st := r.Stats(); st.L2OpenFailures != 0 {
		t.Fatalf("counted %d open failures", st.L2OpenFailures)
	}
}
