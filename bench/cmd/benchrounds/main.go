// Command benchrounds runs the benchmark test binary in rounds for
// `make bench`, ordered so that a ratio compares rows measured next to
// each other:
//
//   - every row runs in its own process, so no row inherits another's heap,
//     caches or position in a long run;
//   - rows measured against the same targeted reference (see
//     internal/pairs) run back to back with it, seconds apart rather than
//     the minutes a full pass takes;
//   - that block runs in one order in odd rounds and the reverse in even
//     ones, so whichever row runs first (and pays for it) alternates.
//
// The output is go test's, one header per round, which benchstat and
// cmd/benchratio read as they read a run of -count 1 passes.
//
//	go run ./cmd/benchrounds -bin /tmp/bench.test -count 20 -benchtime 200ms -filter . -o out.txt
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"

	"github.com/cachekit-io/cachekit-go/bench/internal/pairs"
	"github.com/cachekit-io/cachekit-go/bench/internal/redisserver"
)

func main() {
	bin := flag.String("bin", "", "the compiled benchmark test binary (go test -c)")
	count := flag.Int("count", 6, "rounds")
	benchtime := flag.String("benchtime", "200ms", "-test.benchtime of each row")
	filter := flag.String("filter", ".", "regexp on full row names (BenchmarkX/a/b): the rows to run")
	outPath := flag.String("o", "", "also write the output to this file")
	flag.Parse()
	if err := run(*bin, *count, *benchtime, *filter, *outPath); err != nil {
		fmt.Fprintln(os.Stderr, "benchrounds:", err)
		os.Exit(1)
	}
}

func run(bin string, count int, benchtime, filter, outPath string) error {
	if bin == "" || count < 1 {
		return errors.New("-bin is required and -count must be at least 1")
	}
	re, err := regexp.Compile(filter)
	if err != nil {
		return fmt.Errorf("-filter: %w", err)
	}
	var out io.Writer = os.Stdout
	if outPath != "" {
		f, err := os.Create(outPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out = io.MultiWriter(os.Stdout, f)
	}
	// One Redis for every process of the run: each row's keys carry its
	// process id, so rows never read each other's entries.
	srv, err := redisserver.Start()
	if err != nil {
		return err
	}
	defer srv.Stop()
	env := append(os.Environ(), redisserver.URLEnv+"="+srv.URL())

	rows, err := listRows(bin, env)
	if err != nil {
		return err
	}
	rows = slices.DeleteFunc(rows, func(r string) bool { return !re.MatchString(r) })
	if len(rows) == 0 {
		return fmt.Errorf("no row matches -filter %q", filter)
	}
	groups := pairs.Groups(rows)
	for round := 1; round <= count; round++ {
		fmt.Fprintf(os.Stderr, "== round %d of %d\n", round, count)
		header := true
		for _, row := range roundOrder(groups, round) {
			res, err := runRow(bin, env, row, benchtime)
			if err != nil {
				return err
			}
			if _, err := out.Write(filterOutput(res, header)); err != nil {
				return err
			}
			header = false
		}
	}
	return nil
}

// listRows returns every row the binary has, in the order go test runs
// them, by running each once (-benchtime 1x).
func listRows(bin string, env []string) ([]string, error) {
	res, err := runBinary(bin, env, "-test.run=^$", "-test.bench=.", "-test.benchtime=1x")
	if err != nil {
		return nil, err
	}
	var rows []string
	sc := bufio.NewScanner(bytes.NewReader(res))
	for sc.Scan() {
		if m := resultRE.FindStringSubmatch(sc.Text()); m != nil {
			rows = append(rows, m[1])
		}
	}
	return rows, nil
}

// resultRE matches a result line and captures the row's name without its
// -GOMAXPROCS suffix.
var resultRE = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s`)

// roundOrder flattens groups for round (1-based): each block in its own
// order in odd rounds, reversed in even ones.
func roundOrder(groups [][]string, round int) []string {
	var order []string
	for _, g := range groups {
		g = slices.Clone(g)
		if round%2 == 0 {
			slices.Reverse(g)
		}
		order = append(order, g...)
	}
	return order
}

// benchPattern returns the -test.bench pattern that selects exactly row:
// each level of the name anchored and quoted.
func benchPattern(row string) string {
	parts := strings.Split(row, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// runRow runs one row once and returns the binary's output, failing when
// the row produced no result line (skipped, or renamed since listRows).
func runRow(bin string, env []string, row, benchtime string) ([]byte, error) {
	res, err := runBinary(bin, env, "-test.run=^$", "-test.bench="+benchPattern(row),
		"-test.benchmem", "-test.count=1", "-test.benchtime="+benchtime)
	if err != nil {
		return nil, err
	}
	for line := range strings.Lines(string(res)) {
		if m := resultRE.FindStringSubmatch(line); m != nil && m[1] == row {
			return res, nil
		}
	}
	return nil, fmt.Errorf("%s: no result line in its output:\n%s", row, res)
}

func runBinary(bin string, env []string, args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stderr = os.Stderr
	res, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w\n%s", bin, strings.Join(args, " "), err, res)
	}
	return res, nil
}

// filterOutput keeps what benchstat and benchratio read from one process's
// output: the configuration header (goos, goarch, pkg, cpu) when header is
// set, the result lines always, and nothing else (PASS lines, and the
// header of every process after a round's first, which would read as the
// start of a new round).
func filterOutput(res []byte, header bool) []byte {
	var b bytes.Buffer
	for line := range strings.Lines(string(res)) {
		switch {
		case strings.HasPrefix(line, "Benchmark"):
		case header && isHeader(line):
		default:
			continue
		}
		b.WriteString(line)
	}
	return b.Bytes()
}

func isHeader(line string) bool {
	for _, k := range []string{"goos:", "goarch:", "pkg:", "cpu:"} {
		if strings.HasPrefix(line, k) {
			return true
		}
	}
	return false
}
