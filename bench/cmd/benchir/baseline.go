package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
)

// baseline is the committed instruction-count file. A change to it is its
// own commit, with the reason in the message.
type baseline struct {
	Note      string             `json:"note"`
	Go        string             `json:"go"`
	Valgrind  string             `json:"valgrind"`
	Workloads map[string]float64 `json:"workloads"`
}

func readBaseline(path string) (*baseline, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read baseline: %w", err)
	}
	var b baseline
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, fmt.Errorf("parse baseline %s: %w", path, err)
	}
	return &b, nil
}

func writeBaseline(path string, results []result) error {
	b := baseline{
		Note:      "callgrind instructions per op (cmd/benchir); comparable only with counts from the same Go and valgrind versions",
		Go:        runtime.Version(),
		Valgrind:  valgrindVersion(),
		Workloads: map[string]float64{},
	}
	for _, r := range results {
		b.Workloads[r.name] = r.median
	}
	raw, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

func valgrindVersion() string {
	out, err := exec.Command("valgrind", "--version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// report prints the table and returns the exit code: 1 when a workload
// failed the gate, else 0. A baseline workload is missing only when the
// run's filter (nil: every workload) selects it.
func report(w io.Writer, results []result, base *baseline, filter *regexp.Regexp) int {
	code := 0
	fmt.Fprintf(w, "%-32s %12s %8s  %s\n", "workload", "Ir/op", "A/A", "runs")
	if base != nil {
		fmt.Fprintf(w, "%-32s %12s %8s  %12s %8s  %s\n", "", "", "", "baseline", "delta", "verdict")
		if base.Go != runtime.Version() || base.Valgrind != valgrindVersion() {
			fmt.Fprintf(w, "note: baseline from %s / %s, measuring with %s / %s: counts may shift with the toolchain\n",
				base.Go, base.Valgrind, runtime.Version(), valgrindVersion())
		}
	}
	for _, r := range results {
		runs := make([]string, len(r.runs))
		for i, v := range r.runs {
			runs[i] = fmt.Sprintf("%.1f", v)
		}
		again := ""
		if r.remeasured {
			again = " (measured again: the first runs were noisy)"
		}
		fmt.Fprintf(w, "%-32s %12.1f %7.2f%%  [%s]%s\n", r.name, r.median, r.spread, strings.Join(runs, " "), again)
		if base == nil {
			continue
		}
		want, ok := base.Workloads[r.name]
		if !ok || want <= 0 {
			// A row the baseline does not know is not gated by anything:
			// add it to the baseline (-update) in its own commit.
			fmt.Fprintf(w, "%-32s %12s %8s  %12s %8s  FAIL: not in the baseline (run -update)\n", "", "", "", "-", "-")
			code = 1
			continue
		}
		delta := (r.median - want) / want * 100
		v := verdict(delta, r.spread)
		if v == "FAIL" || v == "INCONCLUSIVE+FAIL" {
			code = 1
		}
		fmt.Fprintf(w, "%-32s %12s %8s  %12.1f %+7.2f%%  %s\n", "", "", "", want, delta, v)
	}
	if checkRatios(w, results, ratioLimits) {
		code = 1
	}
	if base != nil {
		for name := range base.Workloads {
			if !hasResult(results, name) && (filter == nil || filter.MatchString(name)) {
				fmt.Fprintf(w, "%-32s FAIL: missing from this run (baseline %.1f)\n", name, base.Workloads[name])
				code = 1
			}
		}
		if code == 0 {
			fmt.Fprintln(w, "bench-ir: PASS")
		} else {
			fmt.Fprintf(w, "bench-ir: FAIL (a workload is over its limit or its ratio, missing, not in the baseline, or too noisy to gate)\n")
		}
	}
	return code
}

// verdict classifies a change of delta percent measured with an A/A
// spread of spread percent. A noisy row (spread above spreadPct) may exceed
// failPct by its spread, but by maxSlackPct at most; a row noisier than
// maxSpreadPct cannot be gated and fails.
func verdict(delta, spread float64) string {
	if spread > maxSpreadPct {
		return "INCONCLUSIVE+FAIL"
	}
	if spread > spreadPct {
		if delta > failPct+min(spread, maxSlackPct) {
			return "INCONCLUSIVE+FAIL"
		}
		return "INCONCLUSIVE"
	}
	switch {
	case delta > failPct:
		return "FAIL"
	case delta > warnPct:
		return "WARN"
	}
	return "ok"
}

// checkRatios prints each limit whose two rows this run measured and
// reports whether one is over its limit.
func checkRatios(w io.Writer, results []result, limits []ratioLimit) (failed bool) {
	for _, l := range limits {
		row, of := find(results, l.row), find(results, l.of)
		if row == nil || of == nil || of.median <= 0 {
			continue
		}
		ratio, v := row.median/of.median, "ok"
		if ratio > l.max {
			v, failed = "FAIL", true
		}
		fmt.Fprintf(w, "ratio %s / %s = %.3f (limit %.2f)  %s\n", l.row, l.of, ratio, l.max, v)
	}
	return failed
}

func find(results []result, name string) *result {
	for i := range results {
		if results[i].name == name {
			return &results[i]
		}
	}
	return nil
}

func hasResult(results []result, name string) bool {
	for _, r := range results {
		if r.name == name {
			return true
		}
	}
	return false
}
