// Command irworkload runs one instruction-count workload N times, each
// iteration through irOp, the //go:noinline wrapper that callgrind's
// --toggle-collect counts. cmd/benchir builds and drives it; it is not
// meant to be run by hand.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"

	"github.com/cachekit-io/cachekit-go/bench/internal/irwork"
)

// RegressEnv, when set to 1, turns on the deliberate regression hook.
const RegressEnv = "CACHEKIT_BENCH_REGRESS"

var op irwork.Op

// irOp is the one function callgrind collects: one op, nothing else.
//
//go:noinline
func irOp() error { return op() }

func main() {
	name := flag.String("workload", "", "workload name (see -list)")
	n := flag.Int("n", 1000, "iterations")
	yieldEvery := flag.Int("yield-every", 64, "call runtime.Gosched after every this many ops (0: never)")
	list := flag.Bool("list", false, "print the workload names and exit")
	flag.Parse()
	if *list {
		for _, w := range irwork.Names() {
			fmt.Println(w)
		}
		return
	}
	var err error
	if op, err = irwork.New(*name, os.Getenv(RegressEnv) == "1"); err != nil {
		fmt.Fprintln(os.Stderr, "irworkload:", err)
		os.Exit(2)
	}
	for i := 0; i < *n; i++ {
		if err := irOp(); err != nil {
			fmt.Fprintln(os.Stderr, "irworkload:", err)
			os.Exit(1)
		}
		// Let any goroutine the op readied (ristretto's policy worker runs
		// once per 64 reads) run here, outside the collected region, rather
		// than wherever the scheduler next happens to switch.
		if *yieldEvery > 0 && i%*yieldEvery == *yieldEvery-1 {
			runtime.Gosched()
		}
	}
}
