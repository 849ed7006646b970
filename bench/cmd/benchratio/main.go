// Command benchratio reads `go test -bench` output (files or stdin) and
// prints the ratio table of one run: each of our rows divided by its floor
// or peer row, from the medians of sec/op over -count repetitions. Ratios
// taken within one run on one machine cancel most of the machine's noise,
// which absolute times on a shared machine do not.
//
//	go test -bench . -count 6 | tee out.txt; go run ./cmd/benchratio out.txt
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
)

// pair is one row of the ratio table: ours ÷ ref, with an optional target
// (0: informational). For "at least" targets (min) the ratio is ref ÷ ours.
type pair struct {
	ours, ref string
	target    float64
	atLeast   bool
	note      string
}

const (
	ck   = "BenchmarkCachekit/"
	fl   = "BenchmarkFloor/"
	peer = "BenchmarkPeer/GoRedisCache/"
)

var pairs = []pair{
	{ours: ck + "L1Hit/encrypted/struct/100B", ref: peer + "LocalHit/struct/100B", target: 1.0, note: "ours encrypted vs peer unencrypted"},
	{ours: ck + "L1Hit/encrypted/struct/1KiB", ref: peer + "LocalHit/struct/1KiB", target: 1.0, note: "ours encrypted vs peer unencrypted"},
	{ours: ck + "L1Hit/encrypted/bytes/100B", ref: peer + "LocalHit/bytes/100B", target: 1.6, note: "ours encrypted vs peer unencrypted"},
	{ours: ck + "L1Hit/encrypted/bytes/1KiB", ref: peer + "LocalHit/bytes/1KiB", note: "ours encrypted vs peer unencrypted"},
	{ours: ck + "L1Hit/plain/struct/100B", ref: peer + "LocalHit/struct/100B", note: "both unencrypted"},
	{ours: ck + "L1Hit/plain/bytes/100B", ref: peer + "LocalHit/bytes/100B", note: "both unencrypted"},
	{ours: ck + "L2Get/encrypted/bytes/1KiB", ref: fl + "GoRedisGet/1KiB", target: 1.05, note: "raw GET of the same stored bytes"},
	{ours: ck + "Set/encrypted/bytes/1KiB", ref: fl + "GoRedisSet/1KiB", target: 1.05, note: "raw SET of the same stored bytes"},
	{ours: ck + "L2Get/encrypted/bytes/1KiB", ref: peer + "RedisGet/bytes/1KiB", note: "peer unencrypted, local cache skipped"},
	{ours: ck + "Set/encrypted/bytes/1KiB", ref: peer + "Set/bytes/1KiB", note: "peer unencrypted"},
	{ours: ck + "MGet100/encrypted/bytes/100B", ref: ck + "GetSeq100/encrypted/bytes/100B", target: 20, atLeast: true, note: "speed-up of one MGet over 100 Gets"},
	{ours: ck + "L1Hit/encrypted/bytes/100B", ref: fl + "OpenRaw/100B", note: "cost over one bare AES-GCM open"},
	{ours: ck + "L1Hit/encrypted/bytes/100B", ref: fl + "RistrettoGet/100B", note: "cost over one bare ristretto Get"},
	{ours: ck + "L1Hit/encrypted/struct/100B", ref: fl + "MsgpackUnmarshal/struct/100B", note: "cost over one bare msgpack decode"},
	{ours: ck + "L1Hit/encrypted/bytes/100B", ref: ck + "L1Hit/plain/bytes/100B", note: "price of encryption on a hit"},
	{ours: ck + "L1HitParallel/encrypted/bytes/100B", ref: ck + "L1Hit/encrypted/bytes/100B", note: "parallel ns/op over serial (GOMAXPROCS goroutines)"},
	{ours: ck + "L2GetParallel/encrypted/bytes/1KiB", ref: ck + "L2Get/encrypted/bytes/1KiB", note: "parallel ns/op over serial"},
}

// lineRE matches a benchmark result line: name (with -P suffix), N, ns/op.
var lineRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

func main() {
	flag.Parse()
	samples, err := readAll(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchratio:", err)
		os.Exit(2)
	}
	missed := printTable(os.Stdout, samples)
	if missed > 0 {
		fmt.Printf("%d target(s) missed (reported, not failed: timings on a shared machine are not a gate)\n", missed)
	}
}

func readAll(paths []string) (map[string][]float64, error) {
	samples := map[string][]float64{}
	if len(paths) == 0 {
		return samples, parse(os.Stdin, samples)
	}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		err = parse(f, samples)
		f.Close()
		if err != nil {
			return nil, err
		}
	}
	if len(samples) == 0 {
		return nil, errors.New("no benchmark lines in the input")
	}
	return samples, nil
}

func parse(r io.Reader, samples map[string][]float64) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		m := lineRE.FindStringSubmatch(strings.TrimSpace(sc.Text()))
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		samples[m[1]] = append(samples[m[1]], v)
	}
	return sc.Err()
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func short(name string) string {
	for _, p := range []string{ck, fl, "BenchmarkPeer/"} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			switch p {
			case ck:
				return rest
			case fl:
				return "Floor/" + rest
			default:
				return "Peer/" + rest
			}
		}
	}
	return name
}

// printTable prints the ratio table and returns how many targets missed.
func printTable(w io.Writer, samples map[string][]float64) int {
	missed := 0
	fmt.Fprintf(w, "%-36s %-32s %11s %11s %8s %8s  %s\n", "ours", "reference", "ours ns/op", "ref ns/op", "ratio", "target", "note")
	for _, p := range pairs {
		o, okO := samples[p.ours]
		r, okR := samples[p.ref]
		if !okO || !okR {
			continue
		}
		mo, mr := median(o), median(r)
		ratio, target, status := mo/mr, "-", ""
		if p.atLeast {
			ratio = mr / mo
		}
		if p.target > 0 {
			ok := ratio <= p.target
			target = fmt.Sprintf("<=%.2fx", p.target)
			if p.atLeast {
				ok = ratio >= p.target
				target = fmt.Sprintf(">=%.0fx", p.target)
			}
			status = " MET"
			if !ok {
				status = " MISSED"
				missed++
			}
		}
		fmt.Fprintf(w, "%-36s %-32s %11.1f %11.1f %7.2fx %8s  %s%s\n", short(p.ours), short(p.ref), mo, mr, ratio, target, p.note, status)
	}
	return missed
}
