// Package testenv holds facts about the test binary for this module's
// tests, the heap measurement their memory tests share, the background
// load their race tests share (Spin), and the settable clock their
// injected clocks share (Clock).
//
// # Invariants
//
//   - RaceEnabled is true exactly when the binary was built with -race:
//     race_on.go (//go:build race) and race_off.go (//go:build !race) each
//     define it, and exactly one of them is compiled.
//   - Importing it runs no code: it holds a constant and HeapAfterGC,
//     which collects fully before it reads the heap statistics.
//   - Spin's stop returns only once every goroutine it started has ended.
package testenv
