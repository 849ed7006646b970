package nemesis

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Result is the outcome of Run.
type Result struct {
	Histories, Operations int
	// Faults counts the faults injected during the run, by kind.
	Faults map[Kind]int
	// Failed counts histories not linearizable within Config.Delta (the
	// loss windows of losing faults allowed); Undecided those porcupine
	// could not decide within its time limit at some δ.
	Failed, Undecided int
	// Lossy counts histories linearizable within Delta only with the
	// writes of a loss window allowed to be lost; Late those linearizable
	// only with a failed Set landing after another client's later write
	// (before its own Client's next one: cacheaside.Input's Ghost).
	Lossy, Late int
	// Writes counts the writes, Unknown those whose cache call failed
	// (their outcome unknown), Settled those of them a later successful
	// write of the same Client bounds (Config.Fenced).
	Writes, Unknown, Settled int
	// Reads counts the values reads returned; ReadErrors the reads that
	// failed.
	Reads, ReadErrors int
	// Needed counts histories by the least δ of the ladder they need
	// (-1: none of the ladder's, up to 5 s).
	Needed map[time.Duration]int
	// Canaries counts the stale reads planted in linearizable histories;
	// CanaryMisses those the model accepted (a model that accepts stale
	// reads; it must be 0).
	Canaries, CanaryMisses int
	// Errors counts the failed operations by their error's text (digits
	// and addresses blurred).
	Errors map[string]int
	// Artifacts are the visualisations written for failing histories;
	// Listings the first five of them as text (the operations in call
	// order, the faults).
	Artifacts, Listings []string
	// Wall is the run's duration, checks included; Checking the checks'.
	Wall, Checking time.Duration
}

// MaxNeeded is the largest δ a history needed (-1: some history needed
// more than the ladder's 5 s).
func (r Result) MaxNeeded() time.Duration {
	var m time.Duration
	for d := range r.Needed {
		if d < 0 {
			return -1
		}
		m = max(m, d)
	}
	return m
}

// String is the run in one line.
func (r Result) String() string {
	var faults []string
	for k, n := range r.Faults {
		faults = append(faults, fmt.Sprintf("%s %d", k, n))
	}
	need := "none needed more than 0"
	if m := r.MaxNeeded(); m < 0 {
		need = "some needed more than 5s"
	} else if m > 0 {
		need = fmt.Sprintf("the most needed %v", m)
	}
	return fmt.Sprintf("%d histories, %d ops (%d reads, %d writes: %d unknown, %d settled; %d failed reads), faults [%s] in %v (checks %v): "+
		"%d not linearizable, %d undecided, %d lossy, %d with a late Set; δ: %s; canaries %d, missed %d",
		r.Histories, r.Operations, r.Reads, r.Writes, r.Unknown, r.Settled, r.ReadErrors, strings.Join(faults, ", "),
		r.Wall.Round(time.Millisecond), r.Checking.Round(time.Millisecond), r.Failed, r.Undecided, r.Lossy, r.Late, need, r.Canaries, r.CanaryMisses)
}

// Run runs n histories (Config) while cfg.Nemesis injects faults on the
// caller's goroutine, then checks each history with porcupine: the least
// δ it needs, the verdict at cfg.Delta, and a planted stale read the model
// must reject.
func Run(ctx context.Context, cfg Config, n int) (Result, error) {
	if len(cfg.Clients) == 0 {
		return Result{}, fmt.Errorf("nemesis: no clients")
	}
	if cfg.Register && cfg.Fenced {
		return Result{}, fmt.Errorf("nemesis: a Register history cannot be checked with Fenced: its writes of a key overlap")
	}
	defaults(&cfg)
	start := time.Now()
	cur := &running{keys: map[int][]string{}}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	type ran struct {
		hs  []history
		err error
	}
	done := make(chan ran, 1)
	go func() {
		hs, err := runHistories(ctx, cfg, n, cur)
		stop()
		done <- ran{hs, err}
	}()
	var faults []Fault
	if cfg.Nemesis != nil {
		faults = cfg.Nemesis(hctx, cur.all)
	}
	r := <-done
	checking := time.Now()
	res := Result{Faults: map[Kind]int{}, Needed: map[time.Duration]int{}, Errors: map[string]int{}}
	for _, f := range faults {
		res.Faults[f.Kind]++
	}
	for _, h := range r.hs {
		res.Histories++
		count(&res, h, cfg.Fenced)
		v := check(cfg, h, faults)
		res.Operations += len(v.ops)
		res.Needed[v.needed]++
		res.Canaries += v.canary
		res.CanaryMisses += v.missed
		if v.late {
			res.Late++
		}
		switch {
		case v.lossy:
			res.Lossy++
		case v.needed < 0 || v.needed > cfg.Delta:
			res.Failed++
			if v.undecided {
				res.Undecided++
			}
			if len(res.Listings) < 5 {
				res.Listings = append(res.Listings, listing(h, v.ops, overlapping(h, faults)))
			}
			if cfg.Artifacts != "" {
				path := filepath.Join(cfg.Artifacts, fmt.Sprintf("%s-%d.html", cfg.Name, h.n))
				if err := visualise(path, cfg.Delta, h, v.ops, faults); err == nil {
					res.Artifacts = append(res.Artifacts, path)
				}
			}
		}
	}
	res.Wall, res.Checking = time.Since(start), time.Since(checking)
	return res, r.err
}

// count adds h's reads and writes to res.
func count(res *Result, h history, fenced bool) {
	for i, r := range h.records {
		if r.err != nil {
			res.Errors[errClass(r.err)]++
		}
		switch {
		case r.write():
			res.Writes++
			if r.err == nil {
				continue
			}
			res.Unknown++
			if ret, _ := settle(h, i); fenced && r.client >= 0 && ret < h.end {
				res.Settled++
			}
		case r.err != nil:
			res.ReadErrors++
		default:
			res.Reads += len(r.reads)
		}
	}
}

// errClass is err's text with digits blurred, cut at 90 bytes.
func errClass(err error) string {
	b := []byte(err.Error())
	for i, c := range b {
		if c >= '0' && c <= '9' {
			b[i] = '#'
		}
	}
	return string(b[:min(len(b), 90)])
}

// TopErrors returns the n most frequent error classes with their counts.
func (r Result) TopErrors(n int) string {
	type ec struct {
		text string
		n    int
	}
	var all []ec
	for t, c := range r.Errors {
		all = append(all, ec{t, c})
	}
	slices.SortFunc(all, func(a, b ec) int { return cmp.Compare(b.n, a.n) })
	var out []string
	for _, e := range all[:min(n, len(all))] {
		out = append(out, fmt.Sprintf("%d× %s", e.n, e.text))
	}
	return strings.Join(out, "; ")
}

func defaults(cfg *Config) {
	sh := cfg.shape().WithDefaults()
	cfg.Goroutines, cfg.Ops, cfg.Keys, cfg.MaxLoadDelay = sh.Goroutines, sh.Ops, sh.Keys, sh.MaxLoadDelay
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	if cfg.Parallel == 0 {
		cfg.Parallel = 1
	}
	if cfg.Name == "" {
		cfg.Name = "history"
	}
}
