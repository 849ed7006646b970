package main

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/names"
)

// keyring builds the encryption configuration --secure asks for: the current
// master key from CACHEKIT_MASTER_KEY and the decrypt-only previous keys from
// CACHEKIT_PREVIOUS_MASTER_KEYS. It returns nil without --secure, whatever
// the environment holds. Errors name the variable and what is wrong with its
// shape, never its content. The caller clears the returned key slices with
// wipe once the Manager or Client exists.
func (g *globalFlags) keyring(getenv func(string) string) (*encryption.Config, error) {
	if !g.secure {
		return nil, nil
	}
	hexKey := getenv(envMasterKey)
	if hexKey == "" {
		return nil, usageErrorf("--secure needs the master key in $%s (64 hex digits; `cachekit keygen` makes one)", envMasterKey)
	}
	cur, err := encryption.ParseMasterKeyHex(hexKey)
	if err != nil {
		return nil, usageErrorf("$%s is not a master key: %s", envMasterKey, configReason(err))
	}
	cfg := &encryption.Config{MasterKey: cur, Tenant: g.tenant}
	prev, err := encryption.ParseMasterKeyListHex(getenv(envPreviousKeys))
	if err != nil {
		wipe(cfg)
		return nil, usageErrorf("$%s: %s", envPreviousKeys, configReason(err))
	}
	cfg.PreviousKeys = prev
	return cfg, nil
}

// configReason is the Reason of an *encryption.ConfigError (lengths and
// counts only), or a generic phrase.
func configReason(err error) string {
	if ce, ok := err.(*encryption.ConfigError); ok && ce.Reason != "" {
		return ce.Reason
	}
	return "refused"
}

// wipe zeroes the master key bytes held by cfg.
func wipe(cfg *encryption.Config) {
	if cfg == nil {
		return
	}
	clear(cfg.MasterKey)
	for _, k := range cfg.PreviousKeys {
		clear(k)
	}
}

// withClient opens the client for one command, runs fn with it and closes it.
func withClient(g *globalFlags, getenv func(string) string, withKeys bool, fn func(*cachekit.Client) error) error {
	c, err := openClient(g, getenv, withKeys)
	if err != nil {
		return err
	}
	defer c.Close()
	return fn(c)
}

// openClient builds the cachekit.Client every data command goes through, so
// the tool reads and writes exactly what the library does. There is no L1:
// each invocation is a fresh process and must see Redis. Library warnings are
// discarded; the command reports its outcome on one line itself.
func openClient(g *globalFlags, getenv func(string) string, withKeys bool) (*cachekit.Client, error) {
	opts := cachekit.Options{
		RedisURL:           g.resolveRedisURL(getenv),
		KeyPrefix:          g.prefix,
		DisableCompression: g.noCompression,
		Interop:            g.interop,
		DefaultTTL:         defaultSetTTL,
		Logger:             slog.New(slog.DiscardHandler),
		// Without L1 nothing is tracked: this only makes set, del, flush
		// and rotate announce their writes, for applications whose Redis
		// refuses tracking.
		Invalidation: &cachekit.Invalidation{Channel: g.channel},
	}
	if withKeys {
		cfg, err := g.keyring(getenv)
		if err != nil {
			return nil, err
		}
		defer wipe(cfg)
		opts.Encryption = cfg
		opts.RequireEncryption = cfg != nil
	}
	c, err := cachekit.New(opts)
	if err != nil {
		return nil, usageErrorf("%s", strings.TrimPrefix(err.Error(), "cachekit: "))
	}
	if err := checkNameMarker(g, c); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// openOffline builds a Redis-less client (an L1 it never fills) with the
// flags' keyring, prefix and container, for Raw.Open alone: inspect asks
// one whether the entry authenticates under the other compression setting.
func openOffline(g *globalFlags, getenv func(string) string) (*cachekit.Client, error) {
	cfg, err := g.keyring(getenv)
	if err != nil {
		return nil, err
	}
	defer wipe(cfg)
	return cachekit.New(cachekit.Options{
		L1MaxBytes:         1 << 20,
		KeyPrefix:          g.prefix,
		DisableCompression: g.noCompression,
		Interop:            g.interop,
		Encryption:         cfg,
		Logger:             slog.New(slog.DiscardHandler),
	})
}

// openManager builds an encryption Manager for the commands that open
// entries without a client (scan, stats, rotate) and for inspect's match of
// a CK frame's key fingerprint. It returns nil without --secure.
func openManager(g *globalFlags, getenv func(string) string) (*encryption.Manager, error) {
	cfg, err := g.keyring(getenv)
	if err != nil || cfg == nil {
		return nil, err
	}
	defer wipe(cfg)
	m, err := encryption.NewManager(*cfg)
	if err != nil {
		return nil, usageErrorf("%s", strings.TrimPrefix(err.Error(), "encryption: "))
	}
	return m, nil
}

// keyLabel names keyring entry i for humans: "current" or "previous #n".
func keyLabel(i int) string {
	if i == 0 {
		return "current"
	}
	return "previous #" + strconv.Itoa(i)
}

// go-redis logs connection-pool failures through a package-level logger that
// writes to stderr by itself, which would break the promise of one error line
// on stderr; the tool reports Redis failures itself (exit 4).
func init() { cachekit.DiscardRedisDriverLogs() }

// keyCommands are the commands whose KEY is the application's key, mapped
// to its stored name when $CACHEKIT_NAME_KEY is set. scan, stats, rotate
// and flush --match work on stored (opaque) names.
var keyCommands = map[string]bool{"get": true, "set": true, "del": true, "exists": true, "ttl": true, "inspect": true}

// storedKey returns the name, after --prefix, that the application's
// client stores key under: key itself, or with $CACHEKIT_NAME_KEY its
// opaque name (the same function of --tenant, --prefix and key the library
// computes). Reading or writing values under opaque names needs --secure,
// as the library's name key needs encryption; del, exists and ttl open no
// value and do not.
func (g *globalFlags) storedKey(getenv func(string) string, cmd, key string) (string, error) {
	hexKey := getenv(envNameKey)
	if hexKey == "" {
		return key, nil
	}
	if g.interop {
		return "", usageErrorf("$%s does not apply to --interop keys: they are shared with the other SDKs as they are", envNameKey)
	}
	if !g.secure && (cmd == "get" || cmd == "set" || cmd == "inspect") {
		return "", usageErrorf("%s: $%s needs --secure: opaque key names come with encryption", cmd, envNameKey)
	}
	nk, err := encryption.ParseNameKeyHex(hexKey)
	if err != nil {
		return "", usageErrorf("$%s is not a name key: %s", envNameKey, configReason(err))
	}
	defer clear(nk)
	n, err := names.New(nk, cmp.Or(g.tenant, encryption.DefaultTenant), g.prefix, 0)
	if err != nil {
		return "", usageErrorf("$%s is not a name key", envNameKey)
	}
	if key == "" {
		return key, nil // refused later, as without a name key
	}
	g.nameFingerprint = n.Fingerprint()
	return n.Local(key), nil
}

// checkNameMarker refuses a $CACHEKIT_NAME_KEY other than the one the
// marker under --prefix names (the application's clients write it), so a
// wrong name key is an error, not a silent "not found". Without a marker
// it passes.
func checkNameMarker(g *globalFlags, c *cachekit.Client) error {
	if g.nameFingerprint == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	marker := cachekit.NameMarker(cmp.Or(g.tenant, encryption.DefaultTenant))
	found, err := c.Raw().Get(ctx, marker)
	switch {
	case errors.Is(err, cachekit.ErrNotFound):
		return nil
	case err != nil:
		return err
	case string(found) != g.nameFingerprint:
		return usageErrorf("$%s is not the name key of the clients under this prefix (the marker %s%s holds another fingerprint)",
			envNameKey, g.prefix, marker)
	}
	return nil
}
