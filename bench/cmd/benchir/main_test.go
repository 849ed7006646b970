package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestVerdict(t *testing.T) {
	cases := []struct {
		delta, spread float64
		want          string
	}{
		{0, 0, "ok"},
		{-5, 0.1, "ok"},
		{1.0, 0.1, "ok"},
		{1.01, 0.1, "WARN"},
		{2.0, 0.1, "WARN"},
		{2.01, 0.1, "FAIL"},
		{0, 0.51, "INCONCLUSIVE"},
		{2.2, 0.6, "INCONCLUSIVE"},
		{2.26, 0.6, "INCONCLUSIVE+FAIL"}, // slack capped at 0.25 point: limit 2.25%, not 2.6%
		{2.25, 0.9, "INCONCLUSIVE"},
		{2.5, 0.9, "INCONCLUSIVE+FAIL"}, // was within the old 1-point slack
		{0, 1.1, "INCONCLUSIVE+FAIL"},   // too noisy to gate at all (was up to 3%)
	}
	for _, c := range cases {
		if got := verdict(c.delta, c.spread); got != c.want {
			t.Errorf("verdict(%.2f, %.2f) = %q, want %q", c.delta, c.spread, got, c.want)
		}
	}
}

func TestSummarizeMedianAndSpread(t *testing.T) {
	r := result{runs: []float64{1010, 1000, 1005}}
	r.summarize()
	if r.median != 1005 {
		t.Fatalf("median %v, want 1005", r.median)
	}
	if want := 10.0 / 1005 * 100; r.spread != want {
		t.Fatalf("spread %v, want %v", r.spread, want)
	}
}

func TestReadTotal(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cg.out")
	if err := os.WriteFile(p, []byte("version: 1\nevents: Ir\nsummary: 4263000\ntotals: 4263000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if v, err := readTotal(p); err != nil || v != 4263000 {
		t.Fatalf("readTotal = %d, %v", v, err)
	}
	if err := os.WriteFile(p, []byte("events: Ir\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readTotal(p); err == nil {
		t.Fatal("readTotal accepted a file without a summary")
	}
}

func TestReportFailsOnRegression(t *testing.T) {
	base := &baseline{Workloads: map[string]float64{"A": 1000, "B": 1000}}
	var sb strings.Builder
	ok := []result{{name: "A", runs: []float64{1005}, median: 1005}, {name: "B", runs: []float64{990}, median: 990}}
	if code := report(&sb, ok, base, nil); code != 0 {
		t.Fatalf("within 1%%: exit %d\n%s", code, sb.String())
	}
	sb.Reset()
	bad := []result{{name: "A", runs: []float64{1030}, median: 1030}, {name: "B", runs: []float64{1000}, median: 1000}}
	if code := report(&sb, bad, base, nil); code != 1 || !strings.Contains(sb.String(), "FAIL") {
		t.Fatalf("+3%%: exit %d\n%s", code, sb.String())
	}
}

// TestReportFailsOverARatio: a row over its limit as a multiple of another
// row of the run fails, with or without a baseline; a run that measured
// only one of the two rows does not judge the ratio.
func TestReportFailsOverARatio(t *testing.T) {
	limits := ratioLimits
	defer func() { ratioLimits = limits }()
	ratioLimits = []ratioLimit{{row: "T", of: "A", max: 1.25}}
	base := &baseline{Workloads: map[string]float64{"A": 1000, "T": 1300}}
	for _, c := range []struct {
		t    float64
		base *baseline
		want int
	}{{1250, base, 0}, {1260, base, 1}, {1260, nil, 1}, {1200, nil, 0}} {
		var sb strings.Builder
		rs := []result{{name: "A", runs: []float64{1000}, median: 1000}, {name: "T", runs: []float64{c.t}, median: c.t}}
		if code := report(&sb, rs, c.base, nil); code != c.want {
			t.Errorf("T at %v (baseline %v): exit %d, want %d\n%s", c.t, c.base != nil, code, c.want, sb.String())
		}
	}
	var sb strings.Builder
	if code := report(&sb, []result{{name: "T", runs: []float64{5000}, median: 5000}}, nil, nil); code != 0 || strings.Contains(sb.String(), "ratio") {
		t.Errorf("T alone: exit %d\n%s", code, sb.String())
	}
}

// TestReportFailsOnMissingOrUnexpectedRows: a baseline workload absent from
// the run, or a run's workload absent from the baseline, fails the gate.
func TestReportFailsOnMissingOrUnexpectedRows(t *testing.T) {
	base := &baseline{Workloads: map[string]float64{"A": 1000, "B": 1000}}
	var sb strings.Builder
	missing := []result{{name: "A", runs: []float64{1000}, median: 1000}}
	if code := report(&sb, missing, base, nil); code != 1 || !strings.Contains(sb.String(), "missing from this run") {
		t.Fatalf("B missing: exit %d\n%s", code, sb.String())
	}
	sb.Reset()
	if code := report(&sb, missing, base, regexp.MustCompile("^A$")); code != 0 {
		t.Fatalf("-run A: B is not missing, it was not asked for: exit %d\n%s", code, sb.String())
	}
	sb.Reset()
	extra := []result{{name: "A", runs: []float64{1000}, median: 1000}, {name: "B", runs: []float64{1000}, median: 1000},
		{name: "C", runs: []float64{5000}, median: 5000}}
	if code := report(&sb, extra, base, nil); code != 1 || !strings.Contains(sb.String(), "not in the baseline") {
		t.Fatalf("C unexpected: exit %d\n%s", code, sb.String())
	}
}

// TestPooledDropsTheDisturbedRuns: CI's run of 2026-12-07 measured
// L1Hit/unsampled-span twice with one disturbed run in each set; pooled,
// the two highest go and the row gates on the other four. Two disturbed
// runs plus real spread among the rest still read as noisy.
func TestPooledDropsTheDisturbedRuns(t *testing.T) {
	first := result{name: "row", runs: []float64{3556.0, 3600.0, 3557.0}}
	second := result{name: "row", runs: []float64{3597.0, 3558.4, 3554.9}}
	r := pooled(first, second)
	if len(r.runs) != 4 || r.spread > spreadPct || r.median != 3556.5 {
		t.Fatalf("pooled = %v (median %v, spread %.2f%%), want the four lowest, median 3556.5, spread under %v%%", r.runs, r.median, r.spread, spreadPct)
	}
	noisy := pooled(result{runs: []float64{3500, 3600, 3700}}, result{runs: []float64{3550, 3650, 3750}})
	if noisy.spread <= maxSpreadPct {
		t.Fatalf("pooled real spread = %.2f%%, want above %v%%", noisy.spread, maxSpreadPct)
	}
}
