//go:build !race

package protocol_test

// ckRaceEnabled reports a -race build; see cachekey_race_test.go.
const ckRaceEnabled = false
