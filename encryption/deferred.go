package encryption

import (
	"context"
	"crypto/subtle"
)

// opKind is the operation a Deferred finishes.
type opKind uint8

const (
	opEncrypt opKind = iota + 1
	opDecrypt
)

// Deferred is an EncryptNow or DecryptNow call that could not finish within
// the call because the Manager had no keys yet (or was closed). Wait
// finishes it. Until Wait has returned a result, the caller must not modify
// the plaintext, sealed value or AAD it passed.
//
// A Deferred is meant for one goroutine. When Wait fails before the
// operation runs (ctx ended, the derivation failed, the Manager is closed)
// it may be called again; once the operation has run, later calls return the
// same result.
type Deferred struct {
	m   *Manager
	op  opKind
	dst []byte
	in  []byte // plaintext to seal, or sealed value to open
	aad []byte

	done bool
	out  []byte
	info DecryptInfo
	err  error
}

// deferred records a call that Wait will finish.
func (m *Manager) deferred(op opKind, dst, in, aad []byte) *Deferred {
	return &Deferred{m: m, op: op, dst: dst, in: in, aad: aad}
}

// Wait derives the keys, or waits for the derivation already in flight, and
// then performs the operation, returning what EncryptNow or DecryptNow would
// have returned. It fails with ErrClosed after Close, with the derivation's
// error (*ProviderError or *ConfigError) if that failed, or with ctx.Err()
// if ctx ends first; a waiter whose ctx ends does not cancel the derivation
// for anyone else.
func (d *Deferred) Wait(ctx context.Context) ([]byte, error) {
	if d.done {
		return d.out, d.err
	}
	r, err := d.m.ready(ctx)
	if err != nil {
		return nil, err // nothing ran: a later Wait may try again
	}
	switch d.op {
	case opEncrypt:
		d.out, d.err = r.seal(d.dst, d.in, d.aad)
	default:
		d.out, d.info.KeyIndex, d.err = d.m.open(r, d.dst, d.in, d.aad)
	}
	d.done = true
	return d.out, d.err
}

// Info reports which keyring entry decrypted the value, once Wait has
// succeeded for a deferred decryption; otherwise it is the zero value.
func (d *Deferred) Info() DecryptInfo { return d.info }

// flight is one key derivation in progress. Every caller that needs keys
// while it runs waits on done; fields other than done and cancel are
// written once, before done closes.
type flight struct {
	done   chan struct{}
	cancel context.CancelFunc
	ring   *keyring
	err    error
}

// ready returns the derived keyring, deriving it first if needed.
func (m *Manager) ready(ctx context.Context) (*keyring, error) {
	if r := m.state.Load(); r != nil {
		return r, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if r := m.state.Load(); r != nil {
		m.mu.Unlock()
		return r, nil
	}
	f := m.flight
	if f == nil {
		// The derivation keeps the starting caller's values but not its
		// cancellation: a caller that gives up must not fail the others.
		dctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight{done: make(chan struct{}), cancel: cancel}
		m.flight = f
		go m.derive(dctx, f)
	}
	m.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		select {
		case <-f.done: // finished too: prefer the result
		default:
			return nil, ctx.Err()
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return f.ring, nil
}

// derive runs the provider and builds the keyring for flight f, then
// publishes it unless the Manager was closed meanwhile.
func (m *Manager) derive(ctx context.Context, f *flight) {
	defer f.cancel()
	keys, err := m.callProvider(ctx)
	var r *keyring
	if err == nil {
		err = m.checkNameKey(keys)
	}
	if err == nil {
		r, err = newKeyring(keys, m.tenant, "Keys.Current", "Keys.Previous")
	}
	var nameKey []byte
	if err == nil && keys.NameKey != nil {
		nameKey = clone(keys.NameKey)
	}
	clearKeys(keys)

	m.mu.Lock()
	switch {
	case m.closed:
		// Close won the race: the fresh keyring is never published and
		// becomes garbage here; its raw key bytes are already zero.
		r, err = nil, ErrClosed
	case err != nil:
		m.stats.derivationFailures.Add(1)
	default:
		m.nameKey = nameKey
		m.publish(r)
	}
	if m.nameKey == nil {
		clear(nameKey) // not kept: Close won, or the derivation failed
	}
	f.ring, f.err = r, err
	m.flight = nil // a failed derivation is retried by the next caller
	m.mu.Unlock()
	close(f.done)
}

// checkNameKey checks the provider's Keys.NameKey against
// Config.NameKeyFromProvider: present exactly when asked for, 32 bytes,
// not all zero, not the current key.
func (m *Manager) checkNameKey(k Keys) error {
	switch {
	case k.NameKey == nil && m.nameFromProvider:
		return configErr("Keys.NameKey", "is required: Config.NameKeyFromProvider is set")
	case k.NameKey == nil:
		return nil
	case !m.nameFromProvider:
		return configErr("Keys.NameKey", "is set but Config.NameKeyFromProvider is not: key names would be stored as they are")
	case subtle.ConstantTimeCompare(k.NameKey, k.Current) == 1:
		return configErr("Keys.NameKey", "equals Keys.Current: use an independent key")
	}
	return checkMasterKey("Keys.NameKey", k.NameKey)
}

// callProvider calls the provider, turning a failure or a panic into a
// *ProviderError. A panic's value is dropped: it might hold key material.
func (m *Manager) callProvider(ctx context.Context) (keys Keys, err error) {
	defer func() {
		if recover() != nil {
			clearKeys(keys)
			keys, err = Keys{}, &ProviderError{Err: errProviderPanic}
		}
	}()
	keys, err = m.provider(ctx)
	if err != nil {
		clearKeys(keys)
		return Keys{}, &ProviderError{Err: err}
	}
	return keys, nil
}
