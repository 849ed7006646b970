//go:build race

package protocol_test

// ckRaceEnabled reports a -race build, where sync.Pool drops a share of what
// it is given, so allocation budgets that rely on the pool cannot hold.
const ckRaceEnabled = true
