package nemesis

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
)

// checkTimeout bounds porcupine's search on one history at one δ;
// sideTimeout the side checks' (the late Sets, the planted stale read):
// a search that proves a history illegal may have to try every order.
const (
	checkTimeout = 10 * time.Second
	sideTimeout  = 2 * time.Second
)

// ladder is the δs tried, in order, to find the least one a history needs.
var ladder = []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond,
	10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond,
	200 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second, 5 * time.Second}

// operations turns h's records into porcupine operations: a read by key
// for each value a read returned (a failed read, or a miss, is no value
// and is left out), a write for each write whatever its outcome. A write
// that failed is Unknown and never returns (it may take effect at any
// point after its call, or never: porcupine then places it last); when
// the Clients fence (fenced), its Bound is the first write of its key it
// must precede (settle); a failed Set or SetIfAbsent is a Ghost (it may
// land late, over other clients' writes). A write acknowledged in a window
// of loses is Losable.
func operations(h history, fenced bool, loses []window) []porcupine.Operation {
	return operationsGhosts(h, fenced, loses, true)
}

// operationsGhosts is operations, with failed Sets as Ghosts only when
// ghosts is set.
func operationsGhosts(h history, fenced bool, loses []window, ghosts bool) []porcupine.Operation {
	var ops []porcupine.Operation
	for i, r := range h.records {
		if !r.write() {
			if r.err != nil {
				continue
			}
			for _, k := range slices.Sorted(maps.Keys(r.reads)) {
				ops = append(ops, porcupine.Operation{ClientId: r.g, Input: cacheaside.Input{Key: k, Call: r.call},
					Call: r.call, Output: r.reads[k], Return: r.ret, Metadata: r.describe()})
			}
			continue
		}
		in := cacheaside.Input{Key: r.key, Write: true, V: r.v, Ret: r.ret}
		if r.err != nil {
			in.Unknown, in.Ret = true, h.end
			in.Ghost = ghosts && (r.kind == opSet || r.kind == opSetIfAbsent) // a late SET brings its value back
			if fenced && r.client >= 0 {
				_, in.Bound = settle(h, i)
			}
		}
		for _, w := range loses {
			if !in.Unknown && r.ret >= w.from && r.ret <= w.to {
				in.Losable = true
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: r.g, Input: in, Call: r.call, Output: 0, Return: in.Ret, Metadata: r.describe()})
	}
	return ops
}

// settle returns when the failed write h.records[i] of a fencing Client
// can land no more (the return of that Client's first write to the same
// server called after the failure that succeeded: it waited for the
// fence; the end of the history if none), and the value of the first
// write of its key that it must precede (0: none): that Client's first
// successful write of the key called after the failure, or anyone's
// called after that time. Writes of a key are made one at a time, so the
// first is the least value. On a cluster the same server is the same
// hash slot's master.
func settle(h history, i int) (at int64, bound int) {
	u := h.records[i]
	at = h.end
	for _, r := range h.records {
		if r.client == u.client && r.write() && r.err == nil && r.call > u.ret &&
			(!h.cluster || Slot(r.key) == Slot(u.key)) {
			at = min(at, r.ret)
		}
	}
	for _, r := range h.records {
		if r.key != u.key || !r.write() || r.err != nil {
			continue
		}
		if (r.client == u.client && r.call > u.ret) || r.call > at {
			if bound == 0 || r.v < bound {
				bound = r.v
			}
		}
	}
	return at, bound
}

func (r record) describe() string {
	s := fmt.Sprintf("%s by client %d", r.kind, r.client)
	if r.err != nil {
		s += ": " + r.err.Error()
	}
	return s
}

// window is a span of a history (ns since its base) in which the server
// may lose acknowledged writes.
type window struct{ from, to int64 }

// lossWindows returns the windows of the losing faults, relative to h.
func lossWindows(h history, faults []Fault, before time.Duration) []window {
	var out []window
	for _, f := range faults {
		if f.Loses {
			out = append(out, window{f.Start.Sub(h.base).Nanoseconds() - before.Nanoseconds(), f.End.Sub(h.base).Nanoseconds()})
		}
	}
	return out
}

// verdict is the check of one history.
type verdict struct {
	// needed is the least δ of the ladder (and the Config's) under which
	// the history is linearizable; -1: none.
	needed time.Duration
	// lossy: it is linearizable within Delta only with the writes of its
	// loss windows allowed to be lost; late: only with failed Sets landing
	// after other clients' later writes (Ghosts).
	lossy, late bool
	undecided   bool
	// canary is 1 when a stale read was planted in the history, and
	// missed 1 when the model accepted it.
	canary, missed int
	ops            []porcupine.Operation
}

// check checks h: the least δ it needs, whether it needs the loss windows
// for Delta, and whether the model rejects a stale read planted in it.
func check(cfg Config, h history, faults []Fault) verdict {
	plain := operations(h, cfg.Fenced, nil)
	v := verdict{needed: -1, ops: plain}
	// A larger δ admits more, so the least δ that passes is found by
	// bisection: δ 0 first (most histories pass it), then the largest.
	deltas := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(ladder), cfg.Delta))))
	passes := func(i int) bool {
		res := porcupine.CheckOperationsTimeout(cacheaside.Model(deltas[i]), plain, checkTimeout)
		v.undecided = v.undecided || res == porcupine.Unknown
		return res == porcupine.Ok
	}
	switch last := len(deltas) - 1; {
	case passes(0):
		v.needed = 0
	case passes(last):
		lo, hi := 0, last // fails at lo, passes at hi
		for hi-lo > 1 {
			if mid := (lo + hi) / 2; passes(mid) {
				hi = mid
			} else {
				lo = mid
			}
		}
		v.needed = deltas[hi]
	}
	if v.needed < 0 || v.needed > cfg.Delta {
		if loses := lossWindows(h, faults, cfg.LossWindow); len(loses) > 0 {
			lossy := operations(h, cfg.Fenced, loses)
			if porcupine.CheckOperationsTimeout(cacheaside.Model(cfg.Delta), lossy, checkTimeout) == porcupine.Ok {
				v.lossy, v.ops = true, lossy
			}
		}
	}
	if v.needed >= 0 && v.needed <= cfg.Delta && hasGhost(plain) {
		strict := operationsGhosts(h, cfg.Fenced, nil, false)
		v.late = porcupine.CheckOperationsTimeout(cacheaside.Model(cfg.Delta), strict, sideTimeout) == porcupine.Illegal
	}
	if v.needed >= 0 && !v.lossy {
		if stale, ok := plantStale(plain, v.needed); ok {
			v.canary = 1
			switch porcupine.CheckOperationsTimeout(cacheaside.Model(v.needed), stale, sideTimeout) {
			case porcupine.Ok:
				v.missed = 1
			case porcupine.Unknown:
				v.canary = 0 // undecided: no evidence either way
			}
		}
	}
	return v
}

// hasGhost reports whether ops hold a Ghost write.
func hasGhost(ops []porcupine.Operation) bool {
	return slices.ContainsFunc(ops, func(op porcupine.Operation) bool { return op.Input.(cacheaside.Input).Ghost })
}

// plantStale returns ops with one read's value replaced by a value that
// was definitely stale when the read began (δ included): the value the
// key held before a definite write that returned more than δ before the
// read, and that an earlier definite write gave it (or the initial 0).
// false when no read of ops allows it.
func plantStale(ops []porcupine.Operation, delta time.Duration) ([]porcupine.Operation, bool) {
	for i, op := range ops {
		in := op.Input.(cacheaside.Input)
		if in.Write {
			continue
		}
		// last: the latest definite write of the key returned > δ before op.
		last := -1
		for j, w := range ops {
			wi := w.Input.(cacheaside.Input)
			if wi.Write && wi.Key == in.Key && !wi.Unknown && !wi.Losable && w.Return+delta.Nanoseconds() < op.Call &&
				(last < 0 || w.Return > ops[last].Return) {
				last = j
			}
		}
		if last < 0 {
			continue
		}
		// stale: the value of the latest definite write that returned
		// before last began, or 0.
		stale, at := 0, int64(-1)
		for _, w := range ops {
			wi := w.Input.(cacheaside.Input)
			if wi.Write && wi.Key == in.Key && !wi.Unknown && w.Return < ops[last].Call && w.Return > at {
				stale, at = wi.V, w.Return
			}
		}
		if stale < 0 || stale == 0 && absences(ops, in.Key) || stale == op.Output.(int) {
			continue // an absence reads as 0 whichever Delete made it: not a value to plant
		}
		out := slices.Clone(ops)
		out[i].Output = stale
		return out, true
	}
	return nil, false
}

// absences reports whether a write of key in ops is a Delete with a token
// of its own (a negative V: a Register history).
func absences(ops []porcupine.Operation, key string) bool {
	for _, w := range ops {
		if wi := w.Input.(cacheaside.Input); wi.Write && wi.Key == key && wi.V < 0 {
			return true
		}
	}
	return false
}

// visualise writes the porcupine visualisation of a failing history, with
// the faults that overlapped it, to path.
func visualise(path string, delta time.Duration, h history, ops []porcupine.Operation, faults []Fault) error {
	model := cacheaside.Model(delta)
	_, info := porcupine.CheckOperationsVerbose(model, ops, checkTimeout)
	notes := overlapping(h, faults)
	info.AddAnnotations(notes)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(strings.TrimSuffix(path, ".html")+".txt", []byte(listing(h, ops, notes)), 0o644); err != nil {
		return err
	}
	return porcupine.VisualizePath(model, info, path)
}

// overlapping returns the faults that overlapped h as annotations of its
// visualisation (times relative to h's start).
func overlapping(h history, faults []Fault) []porcupine.Annotation {
	var notes []porcupine.Annotation
	for _, f := range faults {
		start, end := f.Start.Sub(h.base).Nanoseconds(), f.End.Sub(h.base).Nanoseconds()
		if end < 0 || start > h.end {
			continue
		}
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: max(start, 0), End: min(end, h.end),
			Description: string(f.Kind), Details: f.Note, BackgroundColor: "#f6c6c6"})
	}
	return notes
}

// listing is a failing history as text, in call order: each operation's
// interval (ms since the history's start), what it did, and the faults.
func listing(h history, ops []porcupine.Operation, notes []porcupine.Annotation) string {
	ops = slices.Clone(ops)
	slices.SortStableFunc(ops, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
	model := cacheaside.Model(0)
	var b strings.Builder
	fmt.Fprintf(&b, "history %d, began %s (ms below are since then)\n", h.n, h.base.Format("15:04:05.000000"))
	for _, n := range notes {
		fmt.Fprintf(&b, "fault %8.3f %8.3f %s %s\n", millis(n.Start), millis(n.End), n.Description, n.Details)
	}
	for _, op := range ops {
		fmt.Fprintf(&b, "g%d %8.3f %8.3f %-40s %v\n", op.ClientId, millis(op.Call), millis(op.Return), model.DescribeOperation(op.Input, op.Output), op.Metadata)
	}
	return b.String()
}

func millis(ns int64) float64 { return float64(ns) / 1e6 }
