// Package coherence keeps a Client's L1 coherent with Redis while
// invalidation is on (cachekit.Invalidation): the Machine that picks the
// mode (tracking while Redis allows it, else a subscription to the
// Clients' announcements, else nothing but the copies' bounded lifetime)
// from l2's Tracker and subscription, the mode heard and the cap on L1
// writes each mode implies (State, read by every L1 write's ticket and by
// an L1 hit), the fallback's background renewals of hot keys, and the log
// line that says why Redis's refusal of a mechanism matters and what to do
// about it.
//
// # Invariants
//
//   - ModeTracking exactly while the Tracker is up; the subscription is
//     stopped when tracking comes up, so no mode keeps a subscription that
//     nothing uses. A refusal moves to a fallback only through a refusal:
//     a Tracker that merely cannot connect leaves ModeNone until it can.
//     ModePubSub exactly while tracking is refused and the subscription is
//     up; its loss is ModeNone (the owner drops its copies), not
//     ModeLifetime; ModeLifetime only after the subscription itself was
//     refused, or with no channel. Events of a stopped subscription are
//     ignored.
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
