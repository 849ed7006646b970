// Package observe records what each public operation of a cachekit.Client
// did: one span (an OpenTelemetry TracerProvider) and one count and
// duration (a MeterProvider) per operation, plus the loader's child span,
// span events and the Client's observable gauges.
//
// # Invariants
//
//   - One record per public operation, not per tier step: Begin when it
//     starts, End when it returns. The operation table (ops.go) is the one
//     place that names an operation: its span name, its "op" attribute and
//     whether it reads values.
//   - Nothing observed carries a key, a value or an error's text: a key
//     appears only as the owner's keyed digest (and only on a recording
//     span), an error only as its class (error.type), which the owner's
//     Classify function decides (a loader's error text may name a key).
//   - Without providers there is no Observer: a nil *Observer's Begin is one
//     nil check, and End, Event and the counters' hooks do nothing.
//   - With SDK metrics, recording allocates nothing in steady state: the
//     attribute sets are built once (per combination, on first use) and
//     observed calls come from a pool.
//
// The package needs nothing of cachekit.Client: the owner gives it the
// providers, a key digest, an error classifier and a snapshot function for
// the gauges.
package observe
