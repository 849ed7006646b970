// Package testenv holds facts about the test binary for this module's tests.
//
// # Invariants
//
//   - RaceEnabled is true exactly when the binary was built with -race:
//     race_on.go (//go:build race) and race_off.go (//go:build !race) each
//     define it, and exactly one of them is compiled.
//   - The package holds constants only: importing it runs no code.
package testenv
