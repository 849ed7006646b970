//go:build race

package testenv

// RaceEnabled reports whether the binary was built with -race. Under the
// race detector sync.Pool drops items at random, so allocation budgets that
// rely on pooled buffers are only asserted in normal builds (make test runs
// the budget tests a second time without -race).
const RaceEnabled = true
