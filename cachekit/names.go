package cachekit

// Opaque key names (Options.Encryption.NameKey): the application's key
// becomes its local name (internal/names) once, where a public call
// enters; below that every path (L1, Redis, the AAD, leases, tracking,
// single-flight, SWR, digests) works on the local name, so with no name
// key nothing changes. Calls that return maps keyed by the application's
// keys (MGet, MGetOrLoad) map them back here.

import (
	"context"
	"log/slog"
	"os"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/names"
)

// NameKeyEnv is the environment variable Secure reads the hex name key
// from (64 hex digits; see encryption.Config.NameKey).
const NameKeyEnv = "CACHEKIT_NAME_KEY"

// NameMarkerKey is the key, after Options.KeyPrefix, of the marker New
// writes with a name key: it holds the name key's fingerprint (hex, 32
// digits). No opaque name contains ':', so it is never an entry's name;
// without a name key it is an ordinary key.
const NameMarkerKey = "cachekit:name-key"

// NameKeyMismatchError is New's error when Redis holds, under the key
// prefix, the marker of another name key (or, at the marker's key,
// something that is not a marker): instances that would store one key
// under different names, so that a Delete on one would not reach another's
// copy. It matches ErrConfig. Marker is the marker's Redis key; Found and
// Want are fingerprints (they reveal nothing of the keys): what Redis
// holds ("not a marker" when it holds anything else, which is never
// quoted), and this Client's.
type NameKeyMismatchError struct {
	Marker, Found, Want string
}

// Error implements the error interface.
func (e *NameKeyMismatchError) Error() string {
	return "cachekit: redis holds the marker of another name key under this prefix (" + e.Marker +
		": fingerprint " + e.Found + ", this client's " + e.Want + "): rotating or turning on a name key is a cache flush, see docs/rotation.md"
}

// Is makes the error match ErrConfig.
func (e *NameKeyMismatchError) Is(target error) bool { return target == ErrConfig }

// nameKeyFromEnv sets enc.NameKey from CACHEKIT_NAME_KEY when it is set
// (Secure); on a malformed one it clears enc's master keys and returns an
// error matching ErrConfig that never quotes the variable.
func nameKeyFromEnv(enc *encryption.Config) error {
	h := os.Getenv(NameKeyEnv)
	if h == "" {
		return nil
	}
	var err error
	if enc.NameKey, err = encryption.ParseNameKeyHex(h); err != nil {
		clear(enc.MasterKey)
		for _, k := range enc.PreviousKeys {
			clear(k)
		}
		return configErrFrom(NameKeyEnv, err)
	}
	return nil
}

// newNamer returns the Namer of opts' name key, nil without one. A name
// key the provider supplies (Encryption.NameKeyFromProvider) is fetched
// now, within LoadTimeout: names are needed before the first Redis call.
func (c *Client) newNamer(opts *Options, m *encryption.Manager) (*names.Namer, error) {
	key := opts.Encryption.NameKey
	if opts.Encryption.NameKeyFromProvider {
		ctx, cancel := context.WithTimeout(c.bg, c.loadTimeout)
		err := m.Warm(ctx)
		cancel()
		if err != nil {
			return nil, encryptionErr(err)
		}
		key = m.NameKey()
		defer clear(key)
	}
	if key == nil {
		return nil, nil
	}
	// The memo holds about one name per 4 KiB of L1 (16384 at the presets'
	// 64 MiB), at least 4096.
	n, err := names.New(key, m.Tenant(), opts.KeyPrefix, max(4096, int(opts.L1MaxBytes>>12)))
	if err != nil {
		return nil, configErrFrom("Encryption.NameKey", err)
	}
	return n, nil
}

// checkMarker writes the name key's marker under the prefix, or compares
// the one Redis holds: a mismatch is a *NameKeyMismatchError, or with
// Options.WarnNameKeyMismatch a warning. Redis not answering is not an
// error (New does not need Redis); it is logged.
func (c *Client) checkMarker(warnOnly bool) error {
	if c.names == nil || c.l2 == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
	defer cancel()
	want := c.names.Fingerprint()
	found, err := c.l2.Marker(ctx, c.fullKey(NameMarkerKey), want)
	switch {
	case err != nil:
		c.warn("could not check the name-key marker: a mixed fleet goes undetected", "", err)
	case found != want:
		if !names.IsFingerprint(found) {
			found = "not a marker"
		}
		e := &NameKeyMismatchError{Marker: c.fullKey(NameMarkerKey), Found: found, Want: want}
		if !warnOnly {
			return e
		}
		c.log.LogAttrs(ctx, slog.LevelWarn, "cachekit: name-key marker mismatch (WarnNameKeyMismatch): "+e.Error())
	}
	return nil
}

// local returns the name that stands for key below the public calls: key
// itself without a name key, else its opaque local name (memoized).
func (c *Client) local(key string) string {
	if c.names == nil {
		return key
	}
	return c.names.Local(key)
}

// locals maps keys with local, returning keys itself without a name key.
func (c *Client) locals(keys []string) []string {
	if c.names == nil {
		return keys
	}
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = c.local(k)
	}
	return out
}

// localItems maps the keys of items with local, returning items itself
// without a name key.
func localItems[V any](c *Client, items map[string]V) map[string]V {
	if c.names == nil {
		return items
	}
	out := make(map[string]V, len(items))
	for k, v := range items {
		out[c.local(k)] = v
	}
	return out
}

// appKeys re-keys m, keyed by the local names of keys, by keys; m itself
// without a name key.
func appKeys[V any](c *Client, keys []string, m map[string]V) map[string]V {
	if c.names == nil || m == nil {
		return m
	}
	out := make(map[string]V, len(m))
	for _, k := range keys {
		if v, ok := m[c.local(k)]; ok {
			out[k] = v
		}
	}
	return out
}

// localLoader wraps an MGetOrLoad loader, which takes and returns the
// application's keys, for the batch below, which works on local names.
func localLoader[T any](c *Client, keys []string, loader func(context.Context, []string) (map[string]T, error)) func(context.Context, []string) (map[string]T, error) {
	if c.names == nil {
		return loader
	}
	app := make(map[string]string, len(keys))
	for _, k := range keys {
		app[c.local(k)] = k
	}
	return func(ctx context.Context, missing []string) (map[string]T, error) {
		asked := make([]string, len(missing))
		for i, l := range missing {
			asked[i] = app[l]
		}
		m, err := loader(ctx, asked)
		return localItems(c, m), err
	}
}

// StoredKey returns the key, after Options.KeyPrefix, that Redis holds
// key's entry under: key itself, or its opaque name with a name key
// (encryption.Config.NameKey). Scan's RawEntry.Key and Swap's RawSwap.Key
// are such stored keys.
func (r Raw) StoredKey(key string) string { return r.c.local(key) }
