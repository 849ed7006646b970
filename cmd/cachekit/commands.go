package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// maxStdinValue bounds a value read from stdin ("-"): the protocol's largest
// payload.
const maxStdinValue = protocol.MaxEnvelopeOriginalSize

var cmdGet = &command{
	name:     "get",
	synopsis: "get KEY [flags]",
	summary:  "print the value stored under KEY as JSON",
	help: "Reads KEY through the cachekit client (decrypting with --secure) and prints\n" +
		"its value as one line of JSON.\n\n" + jsonHelp,
	examples: []string{
		"cachekit get user:42",
		"cachekit get user:42 --secure --tenant acme",
		"cachekit get user:42 --prefix myapp: --redis redis://cache.internal:6379/2",
		"cachekit get users:get_user:61598716255080080f6456eb065c2e51badfaa4320b0efe97469c29cffee8875 --interop",
	},
	minArgs: 1, maxArgs: 1,
	run: func(ctx context.Context, e *env, g *globalFlags, args []string) error {
		return withClient(g, e.getenv, true, func(c *cachekit.Client) error {
			// The client's own read path hands over the payload it opened
			// and checked (exactly one bounded msgpack document), which the
			// tool decodes once itself so integers stay exact.
			payload, err := c.Raw().AppendPayload(ctx, nil, args[0])
			if err != nil {
				return explainEntry(ctx, g, c, args[0], err)
			}
			defer clear(payload) // after the write: v may alias it
			v, err := protocol.DecodeMsgpack(payload, protocol.DefaultDecodeLimits)
			if err != nil {
				return integrityErrorf("stored value is not readable msgpack: %v", err)
			}
			_, err = e.stdout.Write(append(appendJSON(nil, v), '\n'))
			return err
		})
	},
}

var cmdSet = &command{
	name:     "set",
	synopsis: "set KEY JSON [--ttl 10m] [flags]",
	summary:  "store a JSON value under KEY",
	help: "Stores JSON under KEY through the cachekit client: msgpack (canonical msgpack\n" +
		"with --interop), the ByteStorage envelope unless --no-compression or --interop,\n" +
		"AES-256-GCM with --secure. JSON \"-\" reads the value from stdin.\n\n" + jsonHelp,
	examples: []string{
		`cachekit set user:42 '{"name":"Ada","roles":["admin"]}'`,
		`cachekit set user:42 '{"name":"Ada"}' --ttl 1h --secure --tenant acme`,
		`cachekit set blob:1 '{"$bytes":"00ff10"}' --no-compression`,
		`cachekit set counter -5 --ttl 30s`,
		`cachekit set report:9 - < report.json`,
	},
	minArgs: 2, maxArgs: 2,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.DurationVar(&g.ttl, "ttl", defaultSetTTL, "time to live, a Go `duration` (1s to 720h; under 1s rounds up to 1s)")
	},
	run: func(ctx context.Context, e *env, g *globalFlags, args []string) error {
		text := args[1]
		if text == "-" {
			b, err := io.ReadAll(io.LimitReader(e.stdin, maxStdinValue+1))
			if err != nil {
				return usageErrorf("set: cannot read the value from stdin")
			}
			if len(b) > maxStdinValue {
				return usageErrorf("set: value on stdin is larger than %d bytes", maxStdinValue)
			}
			text = string(b)
		}
		v, err := parseJSON(text)
		if err != nil {
			return err
		}
		if _, err := protocol.NormalizeTTL(g.ttl); err != nil {
			return usageErrorf("set: --ttl must be between 1s and 720h")
		}
		err = withClient(g, e.getenv, true, func(c *cachekit.Client) error {
			return c.SetWithTTL(ctx, args[0], v, g.ttl)
		})
		if err == nil && !g.secure && e.getenv(envMasterKey) != "" {
			// After the write, so a failure stays one line on stderr.
			fmt.Fprintf(e.stderr, "cachekit: warning: $%s is set but --secure was not given: the value was written unencrypted\n", envMasterKey)
		}
		return err
	},
}

var cmdDel = &command{
	name:     "del",
	synopsis: "del KEY [flags]",
	summary:  "delete KEY (exit 1 when it was not there)",
	help:     "Deletes KEY through the cachekit client. Exits 1 when KEY did not exist.",
	examples: []string{"cachekit del user:42", "cachekit del user:42 --prefix myapp:"},
	minArgs:  1, maxArgs: 1,
	run: func(ctx context.Context, e *env, g *globalFlags, args []string) error {
		return withClient(g, e.getenv, false, func(c *cachekit.Client) error {
			// One round trip deletes KEY and says whether it held an entry.
			n, err := c.Raw().Delete(ctx, args[0])
			if err != nil {
				return err
			}
			if n == 0 {
				return errNotFound
			}
			return nil
		})
	},
}

var cmdExists = &command{
	name:     "exists",
	synopsis: "exists KEY [flags]",
	summary:  "print true or false (exit 0 or 1)",
	help:     "Prints true and exits 0 when KEY is stored, prints false and exits 1 when not.\nIt does not open the entry.",
	examples: []string{"cachekit exists user:42 && echo cached"},
	minArgs:  1, maxArgs: 1,
	run: func(ctx context.Context, e *env, g *globalFlags, args []string) error {
		return withClient(g, e.getenv, false, func(c *cachekit.Client) error {
			ok, err := c.Exists(ctx, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, ok)
			if !ok {
				return &exitError{code: exitNotFound, msg: "not found"}
			}
			return nil
		})
	},
}

var cmdTTL = &command{
	name:     "ttl",
	synopsis: "ttl KEY [flags]",
	summary:  "print the remaining lifetime of KEY",
	help: "Prints KEY's remaining lifetime in Redis as a Go duration rounded to the\n" +
		"second (\"9m58s\"), or \"none\" for an entry without expiry.",
	examples: []string{"cachekit ttl user:42"},
	minArgs:  1, maxArgs: 1,
	run: func(ctx context.Context, e *env, g *globalFlags, args []string) error {
		return withClient(g, e.getenv, false, func(c *cachekit.Client) error {
			d, err := c.TTL(ctx, args[0])
			if err != nil {
				return err
			}
			if d == 0 {
				fmt.Fprintln(e.stdout, "none")
				return nil
			}
			fmt.Fprintln(e.stdout, d.Round(time.Second))
			return nil
		})
	},
}

var cmdKey = &command{
	name:     "key",
	synopsis: "key --namespace NS --operation OP [--args JSON]",
	summary:  "print the interop/v1 key of a call",
	help: "Prints the interop/v1 key \"NS:OP:<args_hash>\" every CacheKit SDK computes for\n" +
		"a call with these positional arguments. --args is a JSON array.\n\n" + jsonHelp,
	examples: []string{
		`cachekit key --namespace users --operation get_user --args '[42]'`,
		`cachekit key --namespace t --operation op --args '[42,"hello",{"b":2,"a":1}]'`,
		`cachekit get "$(cachekit key --namespace users --operation get_user --args '[42]')" --interop`,
	},
	minArgs: 0, maxArgs: 0,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.StringVar(&g.namespace, "namespace", "", "interop namespace (required)")
		fs.StringVar(&g.operation, "operation", "", "interop operation (required)")
		fs.StringVar(&g.args, "args", "[]", "positional arguments as a JSON array")
	},
	run: func(_ context.Context, e *env, g *globalFlags, _ []string) error {
		if g.namespace == "" || g.operation == "" {
			return usageErrorf("key: --namespace and --operation are required")
		}
		v, err := parseJSON(g.args)
		if err != nil {
			return err
		}
		list, ok := v.([]any)
		if !ok {
			return usageErrorf("key: --args must be a JSON array")
		}
		k, err := cachekit.InteropKey(g.namespace, g.operation, list...)
		if err != nil {
			return usageErrorf("key: %v", err)
		}
		fmt.Fprintln(e.stdout, k)
		return nil
	},
}

var cmdKeygen = &command{
	name:     "keygen",
	synopsis: "keygen",
	summary:  "print a fresh random master key (64 hex digits)",
	help: "Prints 32 bytes from the system's secure random source as 64 hex digits, the\n" +
		"form CACHEKIT_MASTER_KEY takes. Store it in your secret manager; this is the\n" +
		"only command that prints key material, and only to stdout.",
	examples: []string{"cachekit keygen", "export CACHEKIT_MASTER_KEY=$(cachekit keygen)"},
	minArgs:  0, maxArgs: 0,
	run: func(_ context.Context, e *env, _ *globalFlags, _ []string) error {
		var k [32]byte
		if _, err := rand.Read(k[:]); err != nil {
			return usageErrorf("keygen: no secure random source")
		}
		out := hex.AppendEncode(make([]byte, 0, 65), k[:])
		clear(k[:])
		_, err := e.stdout.Write(append(out, '\n'))
		clear(out)
		return err
	},
}

// explainEntry refines an entry that failed to open: when its bytes are a
// cachekit-py CK frame the error says so, since that is a mode mismatch
// rather than damage.
func explainEntry(ctx context.Context, g *globalFlags, c *cachekit.Client, key string, err error) error {
	var ee *cachekit.EntryError
	if !errors.As(err, &ee) {
		return err
	}
	b, rerr := c.Raw().Get(ctx, key)
	switch {
	case rerr != nil:
		return err
	case isPythonFrame(b):
		return integrityErrorf("entry %s: written by the Python SDK in auto mode (CK frame); only cachekit-py reads it", ee.KeyDigest)
	case g.secure && looksPlain(g, b):
		return integrityErrorf("entry %s: stored unencrypted (plaintext); read it without --secure", ee.KeyDigest)
	case !g.secure && !looksPlain(g, b) && len(b) >= encryption.Overhead:
		// The reader's own refusal first (for a plaintext entry the decode
		// bounds refuse, the structural guard's), then the likelier story.
		return integrityErrorf("entry %s: %s; it does not read as plaintext and may be encrypted: pass --secure (with its key and --tenant)",
			ee.KeyDigest, strings.TrimPrefix(ee.Err.Error(), "protocol: "))
	}
	return err
}
