package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

var cmdFlush = &command{
	name:     "flush",
	synopsis: "flush --match PATTERN --yes",
	summary:  "delete every entry whose key matches PATTERN (refuses without --yes)",
	help: "Walks the keyspace with SCAN MATCH (PATTERN is a Redis glob, matched after\n" +
		"--prefix) and deletes the matching keys with UNLINK, 500 at a time, then\n" +
		"prints how many it deleted. Applications whose Client has Invalidation on\n" +
		"(Production's default) drop the keys from their L1 as Redis reports the\n" +
		"deletes; others keep their L1 copies until those expire. It refuses to run\n" +
		"without --yes. After a key compromise: rotate to a fresh master key with no\n" +
		"previous keys, then flush what the old key sealed. On a Redis Cluster URL use\n" +
		"a node address: only that node's keys are deleted.",
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
	opt, err := redis.ParseURL(g.resolveRedisURL(e.getenv))
	if err != nil {
		return usageErrorf("redis URL: %v", err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	var deleted int64
	var cursor uint64
	for {
		keys, next, err := rdb.Scan(ctx, cursor, g.prefix+g.match, scanBatch).Result()
		if err != nil {
			return &cachekit.BackendError{Op: "scan", Err: err}
		}
		if len(keys) > 0 {
			n, err := rdb.Unlink(ctx, keys...).Result()
			if err != nil {
				return &cachekit.BackendError{Op: "unlink", Err: err}
			}
			deleted += n
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	fmt.Fprintf(e.stdout, "deleted %d keys\n", deleted)
	return nil
}
