//go:build race

package l1

// raceEnabled reports a -race build: sync.Pool then drops a quarter of
// its Puts, so ristretto's Get-frequency stripes almost never fill.
const raceEnabled = true
