package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// scanBatch is how many keys one SCAN step asks for and one pipeline reads.
const scanBatch = 500

var cmdScan = &command{
	name:     "scan",
	synopsis: "scan PATTERN [--json | --summary]",
	summary:  "list the entries whose keys match PATTERN: mode, keyring entry, size, TTL",
	help: "Walks the keyspace with SCAN MATCH (PATTERN is a Redis glob, matched after\n" +
		"--prefix, which is stripped from the keys printed) and reads each entry's\n" +
		"bytes and TTL in pipelines of 500, without changing anything. For each entry\n" +
		"it prints the key, the mode (encrypted, plain, or unknown: neither opens nor\n" +
		"parses; a key of another Redis type is unknown), the keyring entry that opens\n" +
		"it (current, previous#N, or none; with --secure only), its size in bytes and\n" +
		"its remaining TTL in milliseconds (-1: no expiry). --json prints one object\n" +
		"per line with the fields key, mode, keyring, bytes, ttl_ms; --summary prints\n" +
		"only the counts. Values are never printed. On a Redis Cluster URL use a node\n" +
		"address: only that node's keys are scanned.",
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
	opt, err := redis.ParseURL(g.resolveRedisURL(e.getenv))
	if err != nil {
		return usageErrorf("redis URL: %v", err)
	}
	opt.ContextTimeoutEnabled = true // ctx (Ctrl-C, the command's bound) ends every call
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	m, err := openManager(g, e.getenv)
	if err != nil {
		return err
	}
	if m != nil {
		defer m.Close()
	}
	counts := map[string]int{}
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, g.prefix+args[0], scanBatch).Result()
		if err != nil {
			return &cachekit.BackendError{Op: "scan", Err: err}
		}
		entries, raw, err := readEntries(ctx, rdb, keys)
		if err != nil {
			return err
		}
		for i := range entries {
			en := &entries[i]
			classifyEntry(ctx, g, m, en, raw[i])
			counts[en.Mode]++
			counts["keyring "+en.Keyring]++
			en.Key = strings.TrimPrefix(en.Key, g.prefix)
			switch {
			case g.summary:
			case g.json:
				b, _ := json.Marshal(en)
				fmt.Fprintf(e.stdout, "%s\n", b)
			default:
				fmt.Fprintf(e.stdout, "%s\t%s\t%s\t%d\t%d\n", en.Key, en.Mode, en.Keyring, en.Bytes, en.TTLMs)
			}
		}
		counts["entries"] += len(entries)
		if cursor = next; cursor == 0 {
			break
		}
	}
	if g.summary {
		fmt.Fprintf(e.stdout, "entries %d: encrypted %d, plain %d, unknown %d\n",
			counts["entries"], counts["encrypted"], counts["plain"], counts["unknown"])
		if m != nil {
			fmt.Fprintf(e.stdout, "keyring: current %d, previous %d, none %d\n", counts["keyring current"],
				counts["entries"]-counts["keyring current"]-counts["keyring none"], counts["keyring none"])
		}
	}
	return nil
}

// readEntries reads the bytes and TTL of keys in one pipeline and returns
// an entry (key, size, TTL) and the bytes of each. A key that expired since
// SCAN returned it is left out; a key of another Redis type has nil bytes.
func readEntries(ctx context.Context, rdb *redis.Client, keys []string) ([]scanEntry, [][]byte, error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	gets := make([]*redis.StringCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			gets[i] = p.Get(ctx, k)
			ttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	out := make([]scanEntry, 0, len(keys))
	raw := make([][]byte, 0, len(keys))
	for i, k := range keys {
		b, err := gets[i].Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			continue // expired meanwhile
		case err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE"):
			b = nil
		case err != nil:
			return nil, nil, &cachekit.BackendError{Op: "get", Err: err}
		}
		ttl := int64(-1)
		if d, err := ttls[i].Result(); err == nil && d >= 0 {
			ttl = d.Milliseconds()
		}
		out = append(out, scanEntry{Key: k, Bytes: len(b), TTLMs: ttl})
		raw = append(raw, b)
	}
	return out, raw, nil
}

// classifyEntry sets en's mode and keyring from its stored bytes:
// encrypted when the keyring opens them, or (without a keyring) when they
// neither parse as the container nor as msgpack and can hold a nonce and a
// tag; plain when they parse; unknown otherwise (including a key of
// another Redis type, whose stored is nil).
func classifyEntry(ctx context.Context, g *globalFlags, m *encryption.Manager, en *scanEntry, stored []byte) {
	en.Mode, en.Keyring = "unknown", "none"
	if stored == nil {
		return
	}
	if m != nil {
		if _, idx, err := decryptWith(ctx, m, stored, g.tenant, en.Key, g.compressed()); err == nil {
			en.Mode, en.Keyring = "encrypted", keyringLabel(idx)
			return
		}
	}
	switch {
	case looksPlain(g, stored):
		en.Mode = "plain"
	case m == nil && len(stored) >= encryption.Overhead:
		en.Mode = "encrypted" // by elimination: not opened without --secure
	}
}

// keyringLabel is keyLabel in scan's one-word form.
func keyringLabel(i int) string {
	if i == 0 {
		return "current"
	}
	return fmt.Sprintf("previous#%d", i)
}
