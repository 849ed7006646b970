package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

var cmdRotate = &command{
	name:     "rotate",
	synopsis: "rotate --secure [--match PATTERN] [--dry-run] [--rate N] [--cursor C] [--json]",
	summary:  "re-seal every entry that opens under a previous key with the current key",
	help: "Walks the keys matching --match (a Redis glob after --prefix, which is matched\n" +
		"literally; default *), reads them in pipelines of about 500 and opens each with the\n" +
		"keyring ($" + envMasterKey + " current, $" + envPreviousKeys + " previous).\n" +
		"Each entry that opened under a previous key (a negative entry's sealed part\n" +
		"behind its head) is sealed again under the current\n" +
		"key and written back with a server-side compare-and-set: only if the stored\n" +
		"bytes are still the ones read (a value the application wrote meanwhile is\n" +
		"kept), keeping the key's remaining TTL. Entries already current, plaintext,\n" +
		"unreadable (tampered, another key or tenant) and keys of other Redis types are\n" +
		"left untouched and counted. Progress goes to stderr (a live line on a terminal,\n" +
		"else a line every 2 s), the summary to stdout (--json: one object), with the\n" +
		"SCAN cursor to resume from when the run stopped early (--cursor C resumes it;\n" +
		"a cluster has no single cursor: run it again, entries already current are skipped).\n" +
		"--dry-run counts without writing; --rate N holds the walk to N entries per\n" +
		"second. Ctrl-C stops the run (a batch in\n" +
		"flight may count as failed; nothing half-written is possible: each swap is\n" +
		"one script). One run covers one --tenant, --prefix and mode: run it for each\n" +
		"the applications use. With a redis+cluster:// URL it walks every master.\n" +
		"Exit 0 when every entry that opened under a previous key was re-sealed or had\n" +
		"changed meanwhile; 5 when some could not be written (or on interrupt)." +
		"\n\nUnder a name key ($CACHEKIT_NAME_KEY) keys are stored under opaque names: this\n" +
		"command works on those names (a pattern selects by --prefix only, and a key it\n" +
		"prints is an opaque name); get, set, del, exists, ttl and inspect map KEY.",
	examples: []string{
		"cachekit rotate --secure --dry-run",
		"cachekit rotate --secure --match 'session:*' --rate 5000 --json",
	},
	minArgs: 0, maxArgs: 0,
	flags: func(fs *flag.FlagSet, g *globalFlags) {
		fs.StringVar(&g.match, "match", "", "Redis glob `pattern` of the keys to rotate (after --prefix; default *)")
		fs.BoolVar(&g.dryRun, "dry-run", false, "count what would be re-sealed, write nothing")
		fs.Float64Var(&g.rate, "rate", 0, "entries per second at most (0: as fast as Redis answers)")
		fs.BoolVar(&g.json, "json", false, "print the summary as one JSON object")
		fs.Uint64Var(&g.cursor, "cursor", 0, "resume an interrupted run at this SCAN `cursor` (from its summary)")
	},
	run:     runRotate,
	timeout: 24 * time.Hour,
}

// rotateSummary is what rotate reports.
type rotateSummary struct {
	Scanned        int     `json:"scanned"`
	Resealed       int     `json:"resealed"`
	WouldReseal    int     `json:"would_reseal,omitempty"`
	AlreadyCurrent int     `json:"already_current"`
	Unreadable     int     `json:"unreadable"`
	Plaintext      int     `json:"plaintext"`
	OtherType      int     `json:"other_type"`
	Changed        int     `json:"changed_or_expired_meanwhile"`
	Failed         int     `json:"failed"`
	Cursor         uint64  `json:"cursor"`   // where to resume (--cursor); 0 on a cluster, which has none
	Complete       bool    `json:"complete"` // the walk reached the end of the keyspace
	Seconds        float64 `json:"seconds"`
	PerSecond      float64 `json:"entries_per_second"`
}

func runRotate(ctx context.Context, e *env, g *globalFlags, _ []string) error {
	if !g.secure {
		return usageErrorf("rotate: --secure is required (the keyring comes from $%s and $%s)", envMasterKey, envPreviousKeys)
	}
	if !(g.rate >= 0 && g.rate <= 1e9) { // also refuses NaN
		return usageErrorf("rotate: --rate must be between 0 (no limit) and 1e9 entries per second")
	}
	pattern := g.match
	if pattern == "" {
		pattern = "*"
	}
	cluster := g.cluster(e.getenv)
	if cluster && g.cursor != 0 {
		return usageErrorf("rotate: --cursor resumes a walk of one server; on a cluster run rotate again (entries already current are skipped)")
	}
	kr, err := openKeyring(g, e.getenv)
	if err != nil {
		return err
	}
	defer kr.Close()
	var sum rotateSummary
	var firstErr error
	start := time.Now()
	lastReport := start
	tty := isTerminal(e.stderr)
	every := 2 * time.Second
	if tty {
		every = 250 * time.Millisecond
	}
	sum.Cursor = g.cursor
	err = withClient(g, e.getenv, false, func(c *cachekit.Client) error {
		return c.Raw().ScanFrom(ctx, pattern, g.cursor, func(batch []cachekit.RawEntry, next uint64) error {
			var swaps []cachekit.RawSwap
			for _, r := range batch {
				sum.Scanned++
				if s, ok, err := resealEntry(ctx, g, kr, r, &sum); err != nil {
					return err
				} else if ok {
					swaps = append(swaps, s)
				}
			}
			if g.dryRun {
				sum.WouldReseal += len(swaps)
			} else if len(swaps) > 0 {
				done, errs := c.Raw().Swap(ctx, swaps)
				for i := range swaps {
					switch {
					case done[i]:
						sum.Resealed++
					case errs[i] != nil:
						sum.Failed++
						if firstErr == nil {
							firstErr = errs[i]
						}
					default:
						sum.Changed++
					}
				}
			}
			if !cluster { // a cluster's masters are walked at once, each with its own cursor
				sum.Cursor = next // this batch is done: a rerun may start after it
			}
			if now := time.Now(); now.Sub(lastReport) >= every {
				lastReport = now
				end := "\n"
				if tty {
					end = "\r" // one live line, rewritten in place
				}
				fmt.Fprintf(e.stderr, "rotate: scanned %d, re-sealed %d, current %d, unreadable %d, changed %d, %.0f/s, cursor %d   %s",
					sum.Scanned, sum.Resealed+sum.WouldReseal, sum.AlreadyCurrent, sum.Unreadable, sum.Changed,
					float64(sum.Scanned)/now.Sub(start).Seconds(), sum.Cursor, end)
			}
			return pace(ctx, start, sum.Scanned, g.rate)
		})
	})
	if tty && lastReport != start {
		fmt.Fprintln(e.stderr) // end the live line
	}
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.PerSecond = float64(sum.Scanned) / sum.Seconds
	}
	sum.Complete = err == nil
	printRotateSummary(e.stdout, g, sum)
	switch {
	case errors.Is(err, context.Canceled) && cluster:
		return &exitError{code: exitPartial, msg: fmt.Sprintf("rotate: interrupted after %d entries; run it again (entries already current are skipped)", sum.Scanned)}
	case errors.Is(err, context.Canceled):
		return &exitError{code: exitPartial, msg: fmt.Sprintf("rotate: interrupted after %d entries; resume with --cursor %d", sum.Scanned, sum.Cursor)}
	case err != nil:
		return err
	case sum.Failed > 0:
		return &exitError{code: exitPartial, msg: fmt.Sprintf("rotate: %d entries could not be re-sealed (run it again: entries already current are skipped): %s", sum.Failed, classifyMsg(firstErr))}
	}
	return nil
}

// resealEntry opens r with the keyring and, when a previous key opened it,
// returns the swap that re-seals it under the current key. It counts r in
// sum otherwise.
func resealEntry(ctx context.Context, g *globalFlags, kr *keyring, r cachekit.RawEntry, sum *rotateSummary) (cachekit.RawSwap, bool, error) {
	if r.Stored == nil {
		sum.OtherType++
		return cachekit.RawSwap{}, false, nil
	}
	// A negative entry (a cached not-found) is re-sealed behind its head.
	head, body := []byte(nil), r.Stored
	if sealed, ok := cachekit.NegativeSealed(r.Stored); ok {
		head, body = r.Stored[:len(r.Stored)-len(sealed)], sealed
	}
	plain, aad, idx, err := kr.open(ctx, r.Key, body)
	switch {
	case err != nil && looksPlain(g, r.Stored):
		sum.Plaintext++
		return cachekit.RawSwap{}, false, nil
	case err != nil: // tampered, another key or tenant, or a key no AAD exists for
		sum.Unreadable++
		return cachekit.RawSwap{}, false, nil
	case idx == 0:
		sum.AlreadyCurrent++
		clear(plain)
		return cachekit.RawSwap{}, false, nil
	}
	sealed, err := kr.m.Encrypt(ctx, append([]byte(nil), head...), plain, aad)
	clear(plain)
	if err != nil {
		return cachekit.RawSwap{}, false, err
	}
	return cachekit.RawSwap{Key: r.Key, Old: r.Stored, New: sealed}, true, nil
}

// pace sleeps until n entries since start are within rate per second.
func pace(ctx context.Context, start time.Time, n int, rate float64) error {
	if rate <= 0 {
		return nil
	}
	due := start.Add(time.Duration(float64(n) / rate * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func printRotateSummary(w io.Writer, g *globalFlags, s rotateSummary) {
	if g.json {
		b, _ := json.Marshal(s)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	verb := fmt.Sprintf("re-sealed %d", s.Resealed)
	if g.dryRun {
		verb = fmt.Sprintf("would re-seal %d (dry run)", s.WouldReseal)
	}
	fmt.Fprintf(w, "scanned %d: %s, already current %d, changed or expired meanwhile %d, unreadable %d, plaintext %d, other types %d, failed %d (%.1f s, %.0f entries/s)\n",
		s.Scanned, verb, s.AlreadyCurrent, s.Changed, s.Unreadable, s.Plaintext, s.OtherType, s.Failed, s.Seconds, s.PerSecond)
	switch {
	case s.Complete:
	case s.Cursor != 0:
		fmt.Fprintf(w, "stopped before the end: resume with --cursor %d\n", s.Cursor)
	default:
		fmt.Fprintln(w, "stopped before the end: run it again (entries already current are skipped)")
	}
}

// classifyMsg is the one-line message classify gives err.
func classifyMsg(err error) string {
	if err == nil {
		return "unknown error"
	}
	_, msg := classify(err)
	return msg
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
