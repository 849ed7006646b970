// Package guard runs the Client's Redis calls under one reliability stack:
// a deadline for every call, backpressure (a bounded number in flight),
// retries of transient failures with jittered backoff, and a
// consecutive-failure circuit breaker with a half-open probe and a
// background PING that closes it on evidence.
//
// # Invariants
//
//   - One retry layer, one budget: an operation's attempts, its backoff and
//     its wait for a slot all fit in OperationTimeout (plus a write's
//     transfer allowance) and in the caller's deadline, whichever ends
//     first; a retry is not started when its backoff would end past it.
//   - Every attempt carries a ctx deadline (AttemptTimeout, within the
//     operation's), so a call returns even when Redis hangs. A nil *Guard
//     (reliability off) runs each call once under the same default bound.
//   - A failed call's error says whose time ran out: the caller's
//     (context.Canceled or context.DeadlineExceeded) or the Client's
//     (ErrTimeout, a net.Error timeout). Other errors come back as fn
//     returned them.
//   - Only transient failures (l2.IsTransient) are retried or counted by
//     the breaker; a call whose caller gave up counts neither way.
//   - An open breaker refuses calls before they wait for a slot; it closes
//     on an answer (the prober's PING, Answered), never on a timer alone:
//     after BreakerOpenFor it lets a few callers' calls through as probes.
//   - Hooks run on the goroutine of the call that fires them, or on the
//     prober's (Ping, and the transitions it or Answered causes); the
//     transition hook runs under the breaker's lock and must not call back
//     into the Guard.
//
// The package needs nothing of cachekit.Client: the Client gives it a
// Config, a clock, a PING and hooks, and maps its sentinels to its own
// public names (cachekit.ErrCircuitOpen is ErrCircuitOpen).
package guard
