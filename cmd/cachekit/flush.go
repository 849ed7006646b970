package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

var cmdFlush = &command{
	name:     "flush",
	synopsis: "flush --match PATTERN --yes",
	summary:  "delete every entry whose key matches PATTERN (refuses without --yes)",
	help: "Walks the keyspace with SCAN MATCH (PATTERN is a Redis glob, matched after\n" +
		"--prefix, which is matched literally) and deletes the matching keys with\n" +
		"UNLINK, about 500 at a time, then\n" +
		"prints how many it deleted. Applications whose Client has Invalidation on\n" +
		"(Production's default) drop the keys from their L1 as Redis reports the\n" +
		"deletes; others keep their L1 copies until those expire. It refuses to run\n" +
		"without --yes. After a key compromise: deploy a fresh master key with no\n" +
		"previous keys, then flush what the old key sealed. With a redis+cluster://\n" +
		"URL it walks every master." +
		"\n\nUnder a name key ($CACHEKIT_NAME_KEY) keys are stored under opaque names: this\n" +
		"command works on those names (a pattern selects by --prefix only, and a key it\n" +
		"prints is an opaque name); get, set, del, exists, ttl and inspect map KEY.",
	examples: []string{"cachekit flush --match 'session:*' --yes", "cachekit flush --match '*' --prefix app: --yes"},
	minArgs:  0, maxArgs: 0,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.StringVar(&g.match, "match", "", "Redis glob `pattern` of the keys to delete (after --prefix; required)")
		fs.BoolVar(&g.yes, "yes", false, "confirm: delete the matching keys")
	},
	run:     runFlush,
	timeout: 10 * time.Minute,
}

func runFlush(ctx context.Context, e *env, g *globalFlags, _ []string) error {
	switch {
	case g.match == "":
		return usageErrorf("flush: --match PATTERN is required (use '*' for every key under --prefix)")
	case !g.yes:
		return usageErrorf("flush: refusing to delete without --yes (see what matches with `cachekit scan %s --summary`)", g.match)
	}
	var deleted int64
	err := withClient(g, e.getenv, false, func(c *cachekit.Client) error {
		var err error
		deleted, err = c.Raw().DeleteMatching(ctx, g.match)
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "deleted %d keys\n", deleted)
	return nil
}
