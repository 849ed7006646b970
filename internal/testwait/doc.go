// Package testwait is how tests wait for something another goroutine or a
// real process (a redis-server, a Sentinel, a cluster node) will make true
// in its own time: they poll a condition until it holds or a limit passes.
//
// A test that can be told when something happens (a channel, a hook, a
// fake clock, testing/synctest) waits for that instead; polling is for
// state nobody signals, such as a server catching up or a counter of the
// code under test.
//
// # Invariants
//
//   - Until calls cond at once, even when limit is zero or negative, and
//     returns true as soon as cond returns true.
//   - Until returns false only when cond has just returned false and limit
//     has passed since Until was called.
//   - Between two calls of cond, Until sleeps 0.5 ms, then twice its last
//     pause each time, up to 10 ms, and never asks to sleep past the
//     deadline. That sleep is the package's only one.
//   - cond runs on the caller's goroutine, one call at a time; the package
//     starts no goroutine.
//   - For fails tb with Fatalf (so it belongs on the test's goroutine) when
//     Until returns false, naming what was awaited and the limit.
package testwait
