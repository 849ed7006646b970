package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

var cmdScan = &command{
	name:     "scan",
	synopsis: "scan PATTERN [--json | --summary]",
	summary:  "list the entries whose keys match PATTERN: mode, keyring entry, size, TTL",
	help: "Walks the keyspace with SCAN MATCH (PATTERN is a Redis glob, matched after\n" +
		"--prefix, which is matched literally and stripped from the keys printed) and\n" +
		"reads each entry's bytes and TTL in pipelines of about 500, changing nothing.\n" +
		"For each entry it prints the key, the mode (encrypted, plain, negative: a cached\n" +
		"not-found, or unknown: neither opens nor parses; a key of another Redis type is\n" +
		"unknown), the keyring entry that opens\n" +
		"it (current, previous#N, or none; with --secure only), its size in bytes and\n" +
		"its remaining TTL in milliseconds (-1: no expiry). --json prints one object\n" +
		"per line with the fields key, mode, keyring, bytes, ttl_ms; --summary prints\n" +
		"only the counts. Values are never printed. With a redis+cluster:// URL it\n" +
		"walks every master." +
		"\n\nUnder a name key ($CACHEKIT_NAME_KEY) keys are stored under opaque names: this\n" +
		"command works on those names (a pattern selects by --prefix only, and a key it\n" +
		"prints is an opaque name); get, set, del, exists, ttl and inspect map KEY.",
	examples: []string{"cachekit scan 'user:*'", "cachekit scan 'session:*' --secure --json", "cachekit scan '*' --summary --secure"},
	minArgs:  1, maxArgs: 1,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.BoolVar(&g.json, "json", false, "one JSON object per entry")
		fs.BoolVar(&g.summary, "summary", false, "print only the counts")
	},
	run:     runScan,
	timeout: 10 * time.Minute, // a keyspace walk outlasts the other commands' bound
}

// scanEntry is one line of scan's output.
type scanEntry struct {
	Key     string `json:"key"`
	Mode    string `json:"mode"`
	Keyring string `json:"keyring"`
	Bytes   int    `json:"bytes"`
	TTLMs   int64  `json:"ttl_ms"`
}

func runScan(ctx context.Context, e *env, g *globalFlags, args []string) error {
	if g.json && g.summary {
		return usageErrorf("scan: --json and --summary exclude each other")
	}
	kr, err := openKeyring(g, e.getenv)
	if err != nil {
		return err
	}
	defer kr.Close()
	counts := map[string]int{}
	err = withClient(g, e.getenv, false, func(c *cachekit.Client) error {
		return c.Raw().Scan(ctx, args[0], func(batch []cachekit.RawEntry) error {
			for _, r := range batch {
				en := scanEntry{Key: r.Key, Bytes: len(r.Stored), TTLMs: -1}
				if r.TTL > 0 {
					en.TTLMs = r.TTL.Milliseconds()
				}
				classifyEntry(ctx, g, kr, &en, r.Key, r.Stored)
				counts[en.Mode]++
				counts["keyring "+en.Keyring]++
				counts["entries"]++
				switch {
				case g.summary:
				case g.json:
					b, _ := json.Marshal(en)
					fmt.Fprintf(e.stdout, "%s\n", b)
				default:
					fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%d\t%d\n", en.Key, en.Mode, en.Keyring, en.Bytes, en.TTLMs)
				}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if g.summary {
		fmt.Fprintf(e.stdout, "entries %d: encrypted %d, plain %d, %sunknown %d\n",
			counts["entries"], counts["encrypted"], counts["plain"], negativeCount(counts["negative"]), counts["unknown"])
		if kr != nil {
			fmt.Fprintf(e.stdout, "keyring: current %d, previous %d, none %d\n", counts["keyring current"],
				counts["entries"]-counts["keyring current"]-counts["keyring none"], counts["keyring none"])
		}
	}
	return nil
}

// keyring opens stored entries the way the library does, for scan, stats
// and rotate: the Manager of --secure's keys and the AAD template the
// library builds for these flags (the Manager's tenant, --prefix, msgpack,
// the container's compressed flag). A nil *keyring (no --secure) opens
// nothing.
type keyring struct {
	m   *encryption.Manager
	tpl protocol.AADTemplate
}

// openKeyring returns the keyring for --secure, or nil without it; Close
// it when done.
func openKeyring(g *globalFlags, getenv func(string) string) (*keyring, error) {
	m, err := openManager(g, getenv)
	if err != nil || m == nil {
		return nil, err
	}
	tpl, err := protocol.NewAADTemplate(m.Tenant(), g.prefix, protocol.FormatMsgpack, g.compressed())
	if err != nil {
		m.Close()
		return nil, usageErrorf("cannot build the AAD for these flags: %v", err)
	}
	return &keyring{m: m, tpl: tpl}, nil
}

// Close wipes the keys.
func (k *keyring) Close() {
	if k != nil {
		k.m.Close()
	}
}

// open decrypts stored, the entry of key (without --prefix), and returns
// the plaintext (the caller clears it), the AAD and the index of the
// keyring entry that opened it. It fails when no AAD exists for key (not
// UTF-8, too long: the library cannot have sealed it) or no entry opens it.
func (k *keyring) open(ctx context.Context, key string, stored []byte) (plain, aad []byte, idx int, err error) {
	if aad, err = k.tpl.Append(nil, key); err != nil {
		return nil, nil, 0, err
	}
	plain, idx, err = k.m.DecryptIndex(ctx, nil, stored, aad)
	return plain, aad, idx, err
}

// classifyEntry sets en's mode and keyring from its stored bytes (key is
// without --prefix): negative for a negative entry's form (a cached "not
// found"; its keyring entry is the one that opens its sealed part);
// encrypted when the keyring opens them, or (without a keyring) when they
// neither parse as the container nor as msgpack and can hold a nonce and a
// tag; plain when they parse; unknown otherwise (including a key of
// another Redis type, whose stored is nil, and a key no AAD can be built
// for).
func classifyEntry(ctx context.Context, g *globalFlags, kr *keyring, en *scanEntry, key string, stored []byte) {
	en.Mode, en.Keyring = "unknown", "none"
	if stored == nil {
		return
	}
	if sealed, ok := cachekit.NegativeSealed(stored); ok {
		en.Mode = "negative"
		if kr != nil {
			if plain, _, idx, err := kr.open(ctx, key, sealed); err == nil {
				clear(plain)
				en.Keyring = keyringLabel(idx)
			}
		}
		return
	}
	if kr != nil {
		if plain, _, idx, err := kr.open(ctx, key, stored); err == nil {
			clear(plain)
			en.Mode, en.Keyring = "encrypted", keyringLabel(idx)
			return
		}
	}
	switch {
	case looksPlain(g, stored):
		en.Mode = "plain"
	case kr == nil && len(stored) >= encryption.Overhead:
		en.Mode = "encrypted" // by elimination: not opened without --secure
	}
}

// negativeCount is the "negative N, " of scan's and stats' counts, shown
// only when there are negative entries (the line keeps its older form
// otherwise).
func negativeCount(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("negative %d, ", n)
}

// keyringLabel is keyLabel in scan's one-word form.
func keyringLabel(i int) string {
	if i == 0 {
		return "current"
	}
	return fmt.Sprintf("previous#%d", i)
}
