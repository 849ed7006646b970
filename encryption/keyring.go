package encryption

import (
	"crypto/subtle"
	"strconv"
)

// MaxPreviousKeys is the most decrypt-only master keys a keyring may hold
// besides the current key. A longer list is refused, never truncated.
const MaxPreviousKeys = 3

// maxKeyring is the size of the largest keyring: the current key and
// MaxPreviousKeys decrypt-only keys.
const maxKeyring = 1 + MaxPreviousKeys

// Keys is a keyring configuration as a KeyProvider returns it: the current
// master key, which encrypts and decrypts, and up to MaxPreviousKeys
// decrypt-only master keys, tried in order after the current key. Each key is
// exactly KeySize raw bytes. No key may appear twice, and the current key
// may not appear among the previous ones.
//
// NameKey is the name key (see Config.NameKey), which a provider may
// supply instead of Config.NameKey: it must then be set exactly when
// Config.NameKeyFromProvider is, and only the first successful call's
// counts (a Manager derives once).
type Keys struct {
	Current  []byte
	Previous [][]byte
	NameKey  []byte
}

// checkKeyring refuses a keyring the protocol says to refuse at load: a key
// that is not exactly KeySize bytes, more than MaxPreviousKeys previous keys,
// the current key repeated among the previous ones, or a previous key listed
// twice. currentField and previousField name the inputs in errors (Config
// and Keys spell them differently).
func checkKeyring(k Keys, currentField, previousField string) error {
	if err := checkMasterKey(currentField, k.Current); err != nil {
		return err
	}
	if len(k.Previous) > MaxPreviousKeys {
		return configErr(previousField, "holds %d keys, more than the %d allowed", len(k.Previous), MaxPreviousKeys)
	}
	for i, p := range k.Previous {
		field := previousField + "[" + strconv.Itoa(i) + "]"
		if err := checkMasterKey(field, p); err != nil {
			return err
		}
		if subtle.ConstantTimeCompare(p, k.Current) == 1 {
			return configErr(field, "repeats the current key; a key that has been current may only be retired, never listed beside itself")
		}
		for j := range i {
			if subtle.ConstantTimeCompare(p, k.Previous[j]) == 1 {
				return configErr(field, "repeats %s[%d]", previousField, j)
			}
		}
	}
	return nil
}

// keyring is a derived keyring: one AES-256-GCM instance per master key,
// current first, each keyed with the tenant's encryption key derived once
// when the keyring is built. It holds no raw key bytes: the derived keys are
// cleared as soon as their ciphers exist. It is immutable after
// construction and safe for concurrent use.
type keyring struct {
	aeads        []*aesGCM // [0] is the current key
	fingerprints [][FingerprintSize]byte
	nonces       *nonceSource // the current key's nonces
}

// newKeyring validates k and derives the tenant's encryption key for every
// entry. It reads k but never modifies or retains it.
func newKeyring(k Keys, tenant, currentField, previousField string) (*keyring, error) {
	if err := checkKeyring(k, currentField, previousField); err != nil {
		return nil, err
	}
	if err := checkTenant(tenant); err != nil {
		return nil, err
	}
	n := 1 + len(k.Previous)
	r := &keyring{
		aeads:        make([]*aesGCM, 0, n),
		fingerprints: make([][FingerprintSize]byte, 0, n),
		nonces:       newNonceSource(),
	}
	var derived [KeySize]byte
	defer clear(derived[:])
	for i := range n {
		master := k.Current
		if i > 0 {
			master = k.Previous[i-1]
		}
		if err := deriveKey(&derived, master, DomainEncryption, tenant); err != nil {
			return nil, err
		}
		a, err := newAEAD(&derived)
		if err != nil {
			return nil, err
		}
		r.aeads = append(r.aeads, a)
		r.fingerprints = append(r.fingerprints, fingerprintOf(&derived))
		clear(derived[:])
	}
	return r, nil
}

// seal encrypts under the current key with the next nonce.
func (r *keyring) seal(dst, plaintext, aad []byte) ([]byte, error) {
	return seal(r.aeads[0], r.nonces, dst, plaintext, aad)
}

// open decrypts with the current key, then each previous key in order, all
// with the identical AAD, and reports which entry authenticated (0 is the
// current key).
func (r *keyring) open(dst, sealed, aad []byte) ([]byte, int, error) {
	return openWith(r.aeads, dst, sealed, aad)
}

// size is the number of keys in the keyring, current included.
func (r *keyring) size() int { return len(r.aeads) }

// copyKeys returns a deep copy of k, so the caller's slices are never
// retained or modified. The copy's bytes are cleared with clearKeys.
func copyKeys(k Keys) Keys {
	c := Keys{Current: clone(k.Current)}
	if len(k.Previous) > 0 {
		c.Previous = make([][]byte, len(k.Previous))
		for i, p := range k.Previous {
			c.Previous[i] = clone(p)
		}
	}
	return c
}

// clone copies b, keeping nil as nil.
func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

// clearKeys zeroes every byte of every key in k.
func clearKeys(k Keys) {
	clear(k.Current)
	clear(k.NameKey)
	for _, p := range k.Previous {
		clear(p)
	}
}
