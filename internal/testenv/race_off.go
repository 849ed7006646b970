//go:build !race

// Package testenv holds facts about the test binary for this module's tests.
package testenv

// RaceEnabled reports whether the binary was built with -race; see
// race_on.go.
const RaceEnabled = false
