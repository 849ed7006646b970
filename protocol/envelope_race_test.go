//go:build race

package protocol

// raceEnabled reports a -race build: sync.Pool then drops pooled items at
// random, so allocation budgets that rely on the LZ4 compressor pool are
// reported rather than asserted.
const raceEnabled = true
