package main

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRoundOrderAlternates(t *testing.T) {
	groups := [][]string{{"A"}, {"S1", "S2", "R"}, {"B"}}
	if got, want := roundOrder(groups, 1), []string{"A", "S1", "S2", "R", "B"}; !slices.Equal(got, want) {
		t.Fatalf("round 1: %v, want %v", got, want)
	}
	if got, want := roundOrder(groups, 2), []string{"A", "R", "S2", "S1", "B"}; !slices.Equal(got, want) {
		t.Fatalf("round 2: %v, want %v", got, want)
	}
	if groups[1][0] != "S1" {
		t.Fatal("roundOrder reversed the caller's group in place")
	}
}

// TestBenchPatternSelectsOneRow checks the pattern the way go test applies
// it: level by level, each level's regexp against that level's name.
func TestBenchPatternSelectsOneRow(t *testing.T) {
	rows := []string{
		"BenchmarkCachekit/Set/encrypted/bytes/1KiB",
		"BenchmarkCachekit/SetL2Only/encrypted/bytes/1KiB",
		"BenchmarkCachekit/L1Hit/encrypted/bytes/100B",
		"BenchmarkCachekit/L1HitParallel/encrypted/bytes/100B",
		"BenchmarkFloor/GoRedisSet/1KiB",
		"BenchmarkFloor/GoRedisSetAfterBusy2us/1KiB",
	}
	matches := func(pattern, row string) bool {
		ps, ns := strings.Split(pattern, "/"), strings.Split(row, "/")
		for i, p := range ps {
			if i >= len(ns) || !regexp.MustCompile(p).MatchString(ns[i]) {
				return false
			}
		}
		return true
	}
	for _, want := range rows {
		p := benchPattern(want)
		for _, r := range rows {
			if got := matches(p, r); got != (r == want) {
				t.Errorf("pattern %q on %s: match %v", p, r, got)
			}
		}
	}
}

func TestFilterOutputKeepsOneHeaderPerRound(t *testing.T) {
	res := []byte("goos: linux\ngoarch: amd64\npkg: x\ncpu: y\n" +
		"BenchmarkFloor/GoRedisSet/1KiB-2 \t 4000\t 55000 ns/op\t 0.001 faults/op\n" +
		"PASS\n")
	first := string(filterOutput(res, true))
	if first != "goos: linux\ngoarch: amd64\npkg: x\ncpu: y\nBenchmarkFloor/GoRedisSet/1KiB-2 \t 4000\t 55000 ns/op\t 0.001 faults/op\n" {
		t.Fatalf("first process of a round:\n%s", first)
	}
	if later := string(filterOutput(res, false)); later != "BenchmarkFloor/GoRedisSet/1KiB-2 \t 4000\t 55000 ns/op\t 0.001 faults/op\n" {
		t.Fatalf("later process of a round:\n%s", later)
	}
}

func TestResultRENamesTheRow(t *testing.T) {
	m := resultRE.FindStringSubmatch("BenchmarkCachekit/L1Hit/encrypted/bytes/100B-2   \t 4930112\t 243.1 ns/op")
	if m == nil || m[1] != "BenchmarkCachekit/L1Hit/encrypted/bytes/100B" {
		t.Fatalf("got %q", m)
	}
	if resultRE.MatchString("--- SKIP: BenchmarkCachekit/Set/encrypted/bytes/1KiB") {
		t.Fatal("a skip line read as a result")
	}
}
