package main

import (
	"strings"
	"testing"
)

const baseRun = `goos: linux
BenchmarkCachekit/L1Hit/encrypted/bytes/100B-2   1000  800 ns/op  121 MB/s  72 B/op  0 allocs/op
BenchmarkCachekit/L1Hit/encrypted/bytes/100B-2   1000  810 ns/op  121 MB/s  70 B/op  0 allocs/op
BenchmarkCachekit/L1Hit/encrypted/struct/100B-2  1000 2200 ns/op   44 MB/s 116 B/op  6 allocs/op
`

func gate(t *testing.T, cur string) (int, string) {
	t.Helper()
	old, err := parse(strings.NewReader(baseRun))
	if err != nil {
		t.Fatal(err)
	}
	now, err := parse(strings.NewReader(cur))
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	return compare(&sb, old, now, 10, 16), sb.String()
}

func TestSameMemoryPassesWhateverTheTime(t *testing.T) {
	cur := strings.ReplaceAll(baseRun, "800 ns/op", "9999 ns/op")
	if code, out := gate(t, cur); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestOneMoreAllocationFails(t *testing.T) {
	cur := strings.ReplaceAll(baseRun, "6 allocs/op", "7 allocs/op")
	if code, out := gate(t, cur); code != 1 || !strings.Contains(out, "more allocations") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}

func TestByteGrowthNeedsBothTolerances(t *testing.T) {
	small := strings.ReplaceAll(baseRun, "116 B/op", "130 B/op") // +14 B: within slack
	if code, out := gate(t, small); code != 0 {
		t.Fatalf("+14 B: exit %d\n%s", code, out)
	}
	big := strings.ReplaceAll(baseRun, "116 B/op", "244 B/op") // +128 B
	if code, out := gate(t, big); code != 1 || !strings.Contains(out, "more bytes") {
		t.Fatalf("+128 B: exit %d\n%s", code, out)
	}
}

func TestNoCommonRowsFails(t *testing.T) {
	if code, _ := gate(t, "BenchmarkOther-2 10 1 ns/op 0 B/op 0 allocs/op\n"); code != 1 {
		t.Fatal("a run sharing no row with the baseline passed")
	}
}

// TestMissingOrUnexpectedRowFails: a baseline row absent from the run, or a
// run's row the baseline lacks, fails.
func TestMissingOrUnexpectedRowFails(t *testing.T) {
	lines := strings.Split(baseRun, "\n")
	var cur []string
	for _, l := range lines {
		if !strings.Contains(l, "struct/100B") {
			cur = append(cur, l)
		}
	}
	if code, out := gate(t, strings.Join(cur, "\n")); code != 1 || !strings.Contains(out, "missing from the new run") {
		t.Fatalf("struct row missing: exit %d\n%s", code, out)
	}
	extra := baseRun + "BenchmarkCachekit/L1Hit/encrypted/new/100B-2 1000 900 ns/op 0 B/op 0 allocs/op\n"
	if code, out := gate(t, extra); code != 1 || !strings.Contains(out, "not in the baseline") {
		t.Fatalf("new row: exit %d\n%s", code, out)
	}
}
