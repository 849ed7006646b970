//go:build race

package bench

// raceEnabled is true when the tests run under -race, where sync.Pool drops
// items at random and allocation counts are not meaningful.
const raceEnabled = true
