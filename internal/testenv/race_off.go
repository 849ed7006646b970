//go:build !race

package testenv

// RaceEnabled reports whether the binary was built with -race; see
// race_on.go.
const RaceEnabled = false
