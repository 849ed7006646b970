//go:build !race

package protocol

// raceEnabled reports a -race build; see envelope_race_test.go.
const raceEnabled = false
