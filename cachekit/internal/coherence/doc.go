// Package coherence is what a Client's L1 may hold while invalidation is
// on (cachekit.Invalidation): the mode an l2.Coherence decided, the cap on
// L1 writes each mode implies (read by every L1 write's ticket and by an
// L1 hit), the fallback's background renewals of hot keys, and the log
// line that says why Redis's refusal of a mechanism matters and what to
// do about it.
//
// # Invariants
//
//   - The cap is -1 (no L1 write) while no mode holds, 0 (no bound) in
//     tracking mode, else the fallback's lifetime in ns; SetMode sets it
//     from the mode alone, and the owner clears L1 after a loss (in that
//     order), so a write that saw a mode cannot land once it was lost.
//   - At most one renewal per key runs at a time, and once Stop was called
//     none starts: none begins while Close waits, or after it.
//   - A refusal's log line names the mechanism, its consequence and the
//     remedy, never a key.
//
// The package needs nothing of cachekit.Client: the Client applies what a
// mode change means to its L1, and runs each renewal's read.
package coherence
