package encryption

import (
	"context"
	"crypto/subtle"
	"sync"
	"sync/atomic"
)

// KeyProvider supplies the keyring when the Manager first needs it. It is
// called lazily (at Warm or at the first Wait/Encrypt/Decrypt), by one
// caller at a time: concurrent first callers share one call. After a failure
// the next call that needs keys calls it again; after a success it is never
// called again. Its ctx carries the values of the caller that started the
// derivation but not that caller's cancellation; Close cancels it.
//
// The Manager takes ownership of the returned slices: it copies nothing,
// derives the tenant's keys from them and then zeroes them. Return fresh
// slices, not ones the provider keeps.
type KeyProvider func(ctx context.Context) (Keys, error)

// Config configures a Manager. NewManager never modifies it and keeps no
// reference to its slices.
type Config struct {
	// MasterKey is the current master key: exactly KeySize raw bytes (use
	// ParseMasterKeyHex for the hex form of CACHEKIT_MASTER_KEY). It
	// encrypts and decrypts. Set it or Provider, not both.
	// default: none (required unless Provider is set)
	MasterKey []byte

	// PreviousKeys are decrypt-only master keys, at most MaxPreviousKeys,
	// each exactly KeySize raw bytes, tried in order after MasterKey. None
	// may repeat MasterKey or another entry.
	// default: none (an empty list is a hard cut-over)
	PreviousKeys [][]byte

	// Provider supplies the keyring lazily instead of MasterKey and
	// PreviousKeys; see KeyProvider.
	// default: nil (keys come from MasterKey and PreviousKeys)
	Provider KeyProvider

	// Tenant is the tenant id every key is derived for. It must be valid
	// UTF-8 of at most MaxTenantSize bytes, and must be the same value the
	// caller puts into the AAD.
	// default: DefaultTenant ("default")
	Tenant string

	// NameKey, when set, is the name key: exactly KeySize raw bytes (use
	// ParseNameKeyHex for the hex form of CACHEKIT_NAME_KEY), not all zero
	// and not equal to MasterKey. A cache client given one stores each key
	// under an opaque name, a keyed function of the tenant and the key
	// (cachekit's Options.Encryption documents the mapping). It is
	// independent of the master keys on purpose: rotating them moves no
	// name. It may sit beside MasterKey or Provider; the Manager itself
	// only validates it.
	// default: none (key names are stored as they are)
	NameKey []byte

	// NameKeyFromProvider says that Provider supplies the name key
	// (Keys.NameKey) instead of NameKey: a provider's Keys.NameKey is
	// refused without it, and required with it. A cache client given it
	// derives the keys when it is built, since names are needed before
	// the first Redis call. It needs Provider and excludes NameKey.
	// default: false
	NameKeyFromProvider bool
}

// Manager seals and opens values for one tenant under a keyring: the current
// master key encrypts, the current and up to MaxPreviousKeys previous keys
// decrypt. It is safe for concurrent use.
//
// Once keys are derived, EncryptNow and DecryptNow finish inside the call:
// one atomic load of the key state, then the cipher; no goroutine, channel
// or mutex, and no allocation when dst has room. Before derivation (a lazy
// Provider) or after Close they hand back a *Deferred instead. Encrypt,
// Decrypt and DecryptIndex are the same operations for callers that can
// block: they wait for derivation themselves.
type Manager struct {
	state atomic.Pointer[keyring] // nil before derivation and after Close

	tenant   string
	provider KeyProvider
	// nameFromProvider is Config.NameKeyFromProvider; nameKey is the name
	// key the provider supplied (guarded by mu; nil before derivation and
	// after Close, which clears it).
	nameFromProvider bool
	nameKey          []byte

	mu     sync.Mutex
	closed bool
	flight *flight // the derivation in progress, if any

	stats counters
}

// NewManager validates cfg and returns a Manager. With static keys
// (MasterKey and PreviousKeys) it derives the tenant's keys immediately, so
// the Manager is ready on return and the master key bytes it copied are
// zeroed before NewManager returns; with a Provider it derives on first
// need. Errors are *ConfigError.
func NewManager(cfg Config) (*Manager, error) {
	tenant := cfg.Tenant
	if tenant == "" {
		tenant = DefaultTenant
	}
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	m := &Manager{tenant: tenant, provider: cfg.Provider, nameFromProvider: cfg.NameKeyFromProvider}
	switch {
	case cfg.NameKeyFromProvider && cfg.Provider == nil:
		return nil, configErr("NameKeyFromProvider", "needs Provider")
	case cfg.NameKeyFromProvider && cfg.NameKey != nil:
		return nil, configErr("NameKeyFromProvider", "is set together with NameKey; choose one source")
	}
	if cfg.NameKey != nil {
		if err := checkMasterKey("NameKey", cfg.NameKey); err != nil {
			return nil, err
		}
		if subtle.ConstantTimeCompare(cfg.NameKey, cfg.MasterKey) == 1 {
			return nil, configErr("NameKey", "equals MasterKey: use an independent key")
		}
	}
	switch {
	case cfg.Provider != nil && (cfg.MasterKey != nil || cfg.PreviousKeys != nil):
		return nil, configErr("Provider", "is set together with MasterKey or PreviousKeys; choose one key source")
	case cfg.Provider != nil:
		return m, nil
	}
	if cfg.MasterKey == nil {
		return nil, configErr("MasterKey", "is required (or set Provider); encryption never falls back to plaintext")
	}
	keys := copyKeys(Keys{Current: cfg.MasterKey, Previous: cfg.PreviousKeys})
	defer clearKeys(keys)
	r, err := newKeyring(keys, tenant, "MasterKey", "PreviousKeys")
	if err != nil {
		return nil, err
	}
	m.publish(r)
	return m, nil
}

// Tenant returns the resolved tenant id: Config.Tenant, or DefaultTenant
// when that was empty. Use it, and nothing else, as the AAD's tenant.
func (m *Manager) Tenant() string { return m.tenant }

// Warm derives the keys now if they are not derived yet, waiting for a
// derivation already in flight. It returns the provider's failure, a
// *ConfigError for bad keys, ctx.Err() if ctx ends first (the derivation
// goes on for other callers), or ErrClosed.
func (m *Manager) Warm(ctx context.Context) error {
	_, err := m.ready(ctx)
	return err
}

// EncryptNow appends nonce ‖ ciphertext ‖ tag for plaintext to dst and
// returns the extended slice. aad is authenticated, not stored: the reader
// must present the identical bytes.
//
// With keys derived it returns (sealed, nil, err) within the call; err is
// ErrNonceExhausted, ErrOverlap or a *LengthError. Otherwise (keys not
// derived yet, or after Close) it returns (nil, d, nil), and d.Wait finishes
// the job; until Wait returns the caller must not modify plaintext or aad.
//
// The spare capacity of dst must not overlap aad, and may overlap plaintext
// only when the ciphertext is to replace it exactly: plaintext starting
// NonceSize bytes after len(dst).
func (m *Manager) EncryptNow(dst, plaintext, aad []byte) ([]byte, *Deferred, error) {
	r := m.state.Load()
	if r == nil {
		return nil, m.deferred(opEncrypt, dst, plaintext, aad), nil
	}
	out, err := r.seal(dst, plaintext, aad)
	return out, nil, err
}

// DecryptNow appends the plaintext of sealed to dst. It tries the current
// key and then each previous key, with the identical aad, and fails with
// ErrAuthFailed when none authenticates, or with a *LengthError when sealed
// is shorter than Overhead. On failure it returns nil and the bytes it wrote
// past len(dst) are zero. The fast and deferred rules are EncryptNow's;
// DecryptNowInfo also reports which key decrypted. The spare capacity of dst
// must not overlap sealed or aad.
func (m *Manager) DecryptNow(dst, sealed, aad []byte) ([]byte, *Deferred, error) {
	out, _, d, err := m.DecryptNowInfo(dst, sealed, aad)
	return out, d, err
}

// DecryptInfo describes a successful decryption.
type DecryptInfo struct {
	// KeyIndex is the keyring entry that authenticated the value: 0 for the
	// current key, i for PreviousKeys[i-1].
	KeyIndex int
}

// DecryptNowInfo is DecryptNow that also reports which keyring entry
// decrypted the value. When it returns a *Deferred, the same information is
// available from d.Info after d.Wait succeeds.
func (m *Manager) DecryptNowInfo(dst, sealed, aad []byte) ([]byte, DecryptInfo, *Deferred, error) {
	r := m.state.Load()
	if r == nil {
		return nil, DecryptInfo{}, m.deferred(opDecrypt, dst, sealed, aad), nil
	}
	out, i, err := m.open(r, dst, sealed, aad)
	return out, DecryptInfo{KeyIndex: i}, nil, err
}

// Encrypt is EncryptNow for callers that can wait: it derives the keys
// first when needed. Its errors are EncryptNow's and Deferred.Wait's.
func (m *Manager) Encrypt(ctx context.Context, dst, plaintext, aad []byte) ([]byte, error) {
	r, err := m.ready(ctx)
	if err != nil {
		return nil, err
	}
	return r.seal(dst, plaintext, aad)
}

// Decrypt is DecryptNow for callers that can wait.
func (m *Manager) Decrypt(ctx context.Context, dst, sealed, aad []byte) ([]byte, error) {
	out, _, err := m.DecryptIndex(ctx, dst, sealed, aad)
	return out, err
}

// DecryptIndex is Decrypt that also returns the keyring entry that
// authenticated the value: 0 for the current key, i for PreviousKeys[i-1].
func (m *Manager) DecryptIndex(ctx context.Context, dst, sealed, aad []byte) ([]byte, int, error) {
	r, err := m.ready(ctx)
	if err != nil {
		return nil, 0, err
	}
	return m.open(r, dst, sealed, aad)
}

// open runs the keyring and records the outcome.
func (m *Manager) open(r *keyring, dst, sealed, aad []byte) ([]byte, int, error) {
	out, i, err := r.open(dst, sealed, aad)
	if err != nil {
		m.stats.failure(err)
		return nil, 0, err
	}
	m.stats.decrypts[i].Add(1)
	return out, i, nil
}

// Close stops the Manager. Every later call fails with ErrClosed (the Now
// methods hand back a *Deferred whose Wait does). A derivation in flight is
// cancelled; if it completes anyway its keys are discarded and its waiters
// get ErrClosed. Calls that loaded the keys before Close may still finish.
// Close is idempotent and always returns nil.
//
// The Manager never holds raw key bytes after a derivation: master key
// copies and derived keys are zeroed as soon as the AES-GCM instances exist.
// Close drops the Manager's references to those instances (Stats keeps
// only fingerprints and counters), so nothing reachable from it decrypts
// any more; the instances themselves are garbage-collected, not wiped (the
// AES key schedule inside crypto/aes has no public way to be wiped).
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.state.Store(nil)
	clear(m.nameKey)
	m.nameKey = nil
	f := m.flight
	m.mu.Unlock()
	if f != nil {
		f.cancel()
	}
	return nil
}

// NameKey returns a copy of the name key the provider supplied
// (Keys.NameKey, with Config.NameKeyFromProvider), or nil before a
// successful derivation, without one, and after Close. The caller should
// clear the copy when done.
func (m *Manager) NameKey() []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.nameKey == nil {
		return nil
	}
	return clone(m.nameKey)
}

// publish installs a derived keyring. Callers hold m.mu or own m.
func (m *Manager) publish(r *keyring) {
	m.stats.last.Store(infoOf(r))
	m.state.Store(r)
}

// setNonceForTest makes the next nonce instance ‖ counter (the remaining
// nonces follow on from it). Tests use it to re-encrypt vectors byte for byte
// and to start near exhaustion. The Manager must be derived and idle.
func (m *Manager) setNonceForTest(instance uint64, counter uint64) {
	m.stats.last.Load().nonces.setForTest(instance, counter)
}
