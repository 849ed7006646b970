// Command benchratio reads `go test -bench` output (files or stdin) and
// prints the ratio table of one run: each of our rows divided by its floor
// or peer row. Ratios taken within one run on one machine cancel most of
// the machine's noise, which absolute times on a shared machine do not.
//
// The input may hold several rounds (each starts with a "goos:" header, as
// cmd/benchrounds writes them for `make bench`, or as a shell loop running
// the test binary once per round with -count 1 does). The pairs are
// internal/pairs.All.
// A ratio is then paired: within each round, ours over the reference, and
// the table shows the median of those per-round ratios and their range.
// Pairing matters here because the machine's speed drifts over minutes,
// and with -count N go test runs the N repetitions of one row back to back,
// so rows compared by their overall medians were measured minutes apart.
// With one round the ratio is the quotient of the medians.
//
//	make bench   # rounds; or: go test -bench . -count 6 | go run ./cmd/benchratio
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/cachekit-io/cachekit-go/bench/internal/pairs"
	"github.com/cachekit-io/cachekit-go/bench/internal/stat"
)

func main() {
	flag.Parse()
	s, err := readAll(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(2)
	}
	missed := printTable(os.Stdout, s)
	if missed > 0 {
		fmt.Printf("%d target(s) missed (reported, not failed: timings on a shared machine are not a gate)\n", missed)
	}
}

// samples holds ns/op per row name, per round (round index -> values).
type samples map[string]map[int][]float64

func readAll(paths []string) (samples, error) {
	s := samples{}
	round := 0
	if len(paths) == 0 {
		if err := parse(os.Stdin, s, &round); err != nil {
			return nil, err
		}
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		err = parse(f, s, &round)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if len(s) == 0 {
		return nil, errors.New("no benchmark lines in the input")
	}
	return s, nil
}

// lineRE matches a benchmark result line: name (with -P suffix), N, ns/op.
var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

// parse adds r's result lines to s. A "goos:" header starts a new round
// (the first one does not, so input without headers is one round).
func parse(r io.Reader, s samples, round *int) error {
	sc := bufio.NewScanner(r)
	seen := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "goos:") {
			if seen {
				*round++
			}
			continue
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		seen = true
		if s[m[1]] == nil {
			s[m[1]] = map[int][]float64{}
		}
		s[m[1]][*round] = append(s[m[1]][*round], v)
	}
	if seen {
		*round++ // the next file is another round
	}
	return sc.Err()
}

// all returns every value of a row, across rounds.
func all(byRound map[int][]float64) []float64 {
	var out []float64
	for _, v := range byRound {
		out = append(out, v...)
	}
	return out
}

// ratio returns ours ÷ ref: the median of per-round ratios (with their
// min and max, and how many rounds had both rows) when at least two rounds
// hold both, else the quotient of the overall medians (rounds = 0 or 1).
func ratio(ours, ref map[int][]float64) (r, lo, hi float64, rounds int) {
	var per []float64
	for k, o := range ours {
		if f, ok := ref[k]; ok {
			per = append(per, stat.Median(o)/stat.Median(f))
		}
	}
	if len(per) < 2 {
		r = stat.Median(all(ours)) / stat.Median(all(ref))
		return r, r, r, len(per)
	}
	return stat.Median(per), slices.Min(per), slices.Max(per), len(per)
}

func short(name string) string {
	for _, p := range []string{pairs.Cachekit, pairs.Floor, "BenchmarkPeer/"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			switch p {
			case pairs.Cachekit:
				return rest
			case pairs.Floor:
				return "Floor/" + rest
			default:
				return "Peer/" + rest
			}
		}
	}
	return name
}

// printTable prints the ratio table and returns how many targets missed.
func printTable(w io.Writer, s samples) int {
	missed := 0
	fmt.Fprintf(w, "%-36s %-32s %11s %11s %8s %15s %8s  %s\n", "ours", "reference", "ours ns/op", "ref ns/op", "ratio", "range (rounds)", "target", "note")
	for _, p := range pairs.All {
		o, okO := s[p.Ours]
		f, okR := s[p.Ref]
		if !okO || !okR {
			continue
		}
		mo, mr := stat.Median(all(o)), stat.Median(all(f))
		r, lo, hi, rounds := ratio(o, f)
		if p.AtLeast {
			r, lo, hi = 1/r, 1/hi, 1/lo
		}
		spread := "-"
		if rounds >= 2 {
			spread = fmt.Sprintf("%.2f-%.2f (%d)", lo, hi, rounds)
		}
		target, status := "-", ""
		if p.Target > 0 {
			ok := r <= p.Target
			target = fmt.Sprintf("<=%.2fx", p.Target)
			if p.AtLeast {
				ok = r >= p.Target
				target = fmt.Sprintf(">=%.0fx", p.Target)
			}
			status = " MET"
			if !ok {
				status = " MISSED"
				missed++
			}
		}
		fmt.Fprintf(w, "%-36s %-32s %11.1f %11.1f %7.2fx %15s %8s  %s%s\n", short(p.Ours), short(p.Ref), mo, mr, r, spread, target, p.Note, status)
	}
	return missed
}
