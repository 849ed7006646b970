package main

import (
	"flag"
	"io"
	"strings"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// Environment variables the tool reads. The master key variables are read
// only when --secure is given: their presence alone never turns encryption on.
const (
	envRedisURL     = "CACHEKIT_REDIS_URL"
	envMasterKey    = "CACHEKIT_MASTER_KEY"
	envPreviousKeys = "CACHEKIT_PREVIOUS_MASTER_KEYS"
	envNameKey      = "CACHEKIT_NAME_KEY"
)

// defaultRedisURL is used when neither --redis nor CACHEKIT_REDIS_URL is set.
const defaultRedisURL = "redis://127.0.0.1:6379/0"

// defaultSetTTL is set's lifetime when --ttl is not given.
const defaultSetTTL = 10 * time.Minute

// globalFlags are the flags every subcommand accepts, plus the few that
// belong to one command (ttl for set; namespace, operation and args for key).
type globalFlags struct {
	ttl       time.Duration
	namespace string
	operation string
	args      string
	json      bool    // scan
	summary   bool    // scan
	match     string  // flush
	yes       bool    // flush
	sample    int     // stats
	dryRun    bool    // rotate
	rate      float64 // rotate
	cursor    uint64  // rotate

	redisURL      string
	secure        bool
	tenant        string
	prefix        string
	channel       string
	interop       bool
	noCompression bool
	// nameFingerprint is the fingerprint of $CACHEKIT_NAME_KEY once
	// storedKey has mapped a key with it ("" without one).
	nameFingerprint string
}

// register defines the global flags on fs.
func (g *globalFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&g.redisURL, "redis", "", "Redis `URL`: redis://, rediss://, unix://, or redis+cluster://host:port?addr=host:port for a cluster (default $"+envRedisURL+", else "+defaultRedisURL+")")
	fs.BoolVar(&g.secure, "secure", false, "encrypt/decrypt with the key in $"+envMasterKey+
		" (previous keys: $"+envPreviousKeys+", comma-separated hex)")
	fs.StringVar(&g.tenant, "tenant", "default", "tenant the encryption keys and AAD are bound to (with --secure)")
	fs.StringVar(&g.prefix, "prefix", "", "key `prefix` the application's client is configured with")
	fs.StringVar(&g.channel, "channel", "", "pub/sub `channel` set, del, flush and rotate announce their writes on: "+
		"the application's Invalidation.Channel (default "+cachekit.DefaultInvalidationChannel+")")
	fs.BoolVar(&g.interop, "interop", false, "KEY is an interop/v1 key; values are canonical msgpack readable by every SDK")
	fs.BoolVar(&g.noCompression, "no-compression", false, "entries are plain msgpack, without the ByteStorage envelope")
}

// resolveRedisURL applies the flag, then the environment, then the default.
func (g *globalFlags) resolveRedisURL(getenv func(string) string) string {
	if g.redisURL != "" {
		return g.redisURL
	}
	if u := getenv(envRedisURL); u != "" {
		return u
	}
	return defaultRedisURL
}

// cluster reports whether the Redis URL names a cluster
// (redis+cluster:// or rediss+cluster://): its SCAN walks every master at
// once, so it has no single cursor to resume from.
func (g *globalFlags) cluster(getenv func(string) string) bool {
	u := strings.ToLower(g.resolveRedisURL(getenv))
	return strings.HasPrefix(u, "redis+cluster://") || strings.HasPrefix(u, "rediss+cluster://")
}

// compressed reports whether entries use the ByteStorage envelope, which is
// also the AAD's compressed flag.
func (g *globalFlags) compressed() bool { return !g.noCompression && !g.interop }

// newFlagSet returns a silent FlagSet: the tool prints its own one-line
// errors and its own usage text.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseInterleaved parses args against fs with flags allowed before, between
// and after positional arguments (the standard flag package stops at the
// first positional one). "--" ends the flags: everything after it is
// positional, which is how a key starting with '-' is given. A lone "-" and
// negative numbers ("-5", "-1.5") are positional too, so `set k -5` works.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			positional = append(positional, args[i+1:]...)
			break
		}
		if !looksLikeFlag(a) {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	// fs.Parse stops early only at a non-flag, which the split above never
	// passes it; a value such as "--prefix --" is consumed as a value.
	return append(positional, fs.Args()...), nil
}

// looksLikeFlag reports whether a is a flag rather than a positional
// argument.
func looksLikeFlag(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	c := a[1]
	if c == '-' {
		if len(a) == 2 {
			return false
		}
		c = a[2]
	}
	return !(c >= '0' && c <= '9') && c != '.'
}

// takesValue reports whether the flag written as a needs the next argument as
// its value: a defined, non-boolean flag without "=value".
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimLeft(a, "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}
