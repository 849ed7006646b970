//go:build !race

package l1

// raceEnabled reports a -race build (see race_on_test.go).
const raceEnabled = false
