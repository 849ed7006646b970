// Command allocgate compares the memory columns of two `go test -bench
// -benchmem` outputs, a committed baseline and a new run, and fails when a
// benchmark allocates more: its median allocs/op grew, or its median B/op
// grew by more than the tolerance. Time columns are ignored on purpose:
// on a shared machine they are noise, so they never fail the build
// (benchstat prints them for the log).
//
//	go run ./cmd/allocgate baseline.txt new.txt
//
// B/op has a tolerance (-bytes-tolerance percent and -bytes-slack bytes,
// both must be exceeded) because rows that allocate only now and then
// (ristretto's batch buffers) report an amortised B/op that moves with
// b.N. allocs/op is an integer count and has none.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/cachekit-io/cachekit-go/bench/internal/stat"
)

// mem is one benchmark's memory samples.
type mem struct{ bytes, allocs []float64 }

var (
	nameRE   = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s`)
	bytesRE  = regexp.MustCompile(`([0-9.]+) B/op`)
	allocsRE = regexp.MustCompile(`([0-9.]+) allocs/op`)
)

func main() {
	tolPct := flag.Float64("bytes-tolerance", 10, "B/op may grow by this many percent")
	slack := flag.Float64("bytes-slack", 16, "B/op may grow by this many bytes")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: allocgate [flags] baseline.txt new.txt")
		os.Exit(2)
	}
	old, err := load(flag.Arg(0))
	if err == nil {
		var cur map[string]*mem
		if cur, err = load(flag.Arg(1)); err == nil {
			os.Exit(compare(os.Stdout, old, cur, *tolPct, *slack))
		}
	}
	fmt.Fprintln(os.Stderr, "allocgate:", err)
	os.Exit(2)
}

func load(path string) (map[string]*mem, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out, err := parse(f)
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no -benchmem lines", path)
	}
	return out, err
}

func parse(r io.Reader) (map[string]*mem, error) {
	out := map[string]*mem{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		m := nameRE.FindStringSubmatch(line)
		b, a := bytesRE.FindStringSubmatch(line), allocsRE.FindStringSubmatch(line)
		if m == nil || b == nil || a == nil {
			continue
		}
		bv, err1 := strconv.ParseFloat(b[1], 64)
		av, err2 := strconv.ParseFloat(a[1], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		e := out[m[1]]
		if e == nil {
			e = &mem{}
			out[m[1]] = e
		}
		e.bytes = append(e.bytes, bv)
		e.allocs = append(e.allocs, av)
	}
	return out, sc.Err()
}

// compare prints one line per benchmark present in both runs and returns
// the exit code: 1 when any allocates more than its baseline.
func compare(w io.Writer, old, cur map[string]*mem, tolPct, slack float64) int {
	names := make([]string, 0, len(cur))
	for n := range cur {
		names = append(names, n)
	}
	sort.Strings(names)
	code, compared := 0, 0
	fmt.Fprintf(w, "%-60s %18s %18s  %s\n", "benchmark", "allocs/op old→new", "B/op old→new", "verdict")
	for _, n := range names {
		o, ok := old[n]
		if !ok {
			// Nothing gates a row the baseline lacks: add it there.
			fmt.Fprintf(w, "%-60s %18s %18s  FAIL: not in the baseline\n", n, "", "")
			code = 1
			continue
		}
		compared++
		c := cur[n]
		oa, ca := stat.Median(o.allocs), stat.Median(c.allocs)
		ob, cb := stat.Median(o.bytes), stat.Median(c.bytes)
		verdict := "ok"
		switch {
		case ca > oa:
			verdict, code = "FAIL: more allocations", 1
		case cb > ob+slack && cb > ob*(1+tolPct/100):
			verdict, code = "FAIL: more bytes", 1
		}
		fmt.Fprintf(w, "%-60s %8.0f → %-7.0f %8.0f → %-7.0f  %s\n", n, oa, ca, ob, cb, verdict)
	}
	for n := range old {
		if _, ok := cur[n]; !ok {
			fmt.Fprintf(w, "%-60s FAIL: missing from the new run\n", n)
			code = 1
		}
	}
	if compared == 0 {
		fmt.Fprintln(w, "allocgate: no benchmark in common with the baseline")
		return 1
	}
	if code == 0 {
		fmt.Fprintf(w, "allocgate: PASS (%d benchmarks, no allocation increase)\n", compared)
	} else {
		fmt.Fprintln(w, "allocgate: FAIL (a row allocates more, is missing, or is not in the baseline; update bench/baseline.txt in its own commit only with a reason)")
	}
	return code
}
