package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/bits"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// errSampled stops a Raw().Scan once stats has its sample.
var errSampled = errors.New("sample complete")

var cmdStats = &command{
	name:     "stats",
	synopsis: "stats [PATTERN] [--sample N]",
	summary:  "a sampled summary of the entries: by mode, by keyring entry, by size",
	help: "Reads up to --sample entries (default 10000) whose keys match PATTERN (a Redis\n" +
		"glob after --prefix; default *), in SCAN order, and prints how many are\n" +
		"encrypted, plain, negative (cached not-founds) or unknown, which keyring entry\n" +
		"opens them (with --secure),\n" +
		"how many have no expiry, and a histogram of their stored sizes. Nothing is\n" +
		"changed and no value is printed. During a key rotation, run it with the old\n" +
		"key among CACHEKIT_PREVIOUS_MASTER_KEYS to see how much is still sealed under it." +
		"\n\nUnder a name key ($CACHEKIT_NAME_KEY) keys are stored under opaque names: this\n" +
		"command works on those names (a pattern selects by --prefix only, and a key it\n" +
		"prints is an opaque name); get, set, del, exists, ttl and inspect map KEY.",
	examples: []string{"cachekit stats --secure", "cachekit stats 'session:*' --sample 50000 --secure"},
	minArgs:  0, maxArgs: 1,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.IntVar(&g.sample, "sample", 10000, "how many entries to read at most")
	},
	run:     runStats,
	timeout: 10 * time.Minute,
}

func runStats(ctx context.Context, e *env, g *globalFlags, args []string) error {
	pattern := "*"
	if len(args) == 1 {
		pattern = args[0]
	}
	if g.sample < 1 {
		return usageErrorf("stats: --sample must be at least 1")
	}
	kr, err := openKeyring(g, e.getenv)
	if err != nil {
		return err
	}
	defer kr.Close()
	modes := map[string]int{}
	keyrings := map[string]int{}
	var sizes [16]int // bucket b: sizes in [4^b, 4^(b+1)); bucket 0 also holds 0
	n, noExpiry := 0, 0
	err = withClient(g, e.getenv, false, func(c *cachekit.Client) error {
		return c.Raw().Scan(ctx, pattern, func(batch []cachekit.RawEntry) error {
			for _, r := range batch {
				var en scanEntry
				classifyEntry(ctx, g, kr, &en, r.Key, r.Stored)
				modes[en.Mode]++
				keyrings[en.Keyring]++
				if r.TTL == 0 {
					noExpiry++
				}
				b := 0
				if len(r.Stored) > 0 {
					b = min((bits.Len(uint(len(r.Stored)))-1)/2, len(sizes)-1)
				}
				sizes[b]++
				if n++; n >= g.sample {
					return errSampled
				}
			}
			return nil
		})
	})
	if err != nil && !errors.Is(err, errSampled) {
		return err
	}
	fmt.Fprintf(e.stdout, "entries sampled   %d (of at most %d, pattern %q)\n", n, g.sample, pattern)
	fmt.Fprintf(e.stdout, "by mode           encrypted %d, plain %d, %sunknown %d\n", modes["encrypted"], modes["plain"], negativeCount(modes["negative"]), modes["unknown"])
	if kr != nil {
		fmt.Fprintf(e.stdout, "by keyring entry  current %d", keyrings["current"])
		for i := 1; i <= 3; i++ {
			if k := keyringLabel(i); keyrings[k] > 0 {
				fmt.Fprintf(e.stdout, ", %s %d", k, keyrings[k])
			}
		}
		fmt.Fprintf(e.stdout, ", none %d\n", keyrings["none"])
	}
	fmt.Fprintf(e.stdout, "no expiry         %d\n", noExpiry)
	fmt.Fprintln(e.stdout, "stored size")
	for b, count := range sizes {
		if count > 0 {
			fmt.Fprintf(e.stdout, "  < %-12s %d\n", humanBytes(1<<(2*(b+1))), count)
		}
	}
	return nil
}

// humanBytes renders a power of two as B, KiB, MiB or GiB.
func humanBytes(n int) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
