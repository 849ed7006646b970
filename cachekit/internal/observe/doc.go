// Package observe records what each public operation of a cachekit.Client
// did: one span (an OpenTelemetry TracerProvider) and one count and
// duration (a MeterProvider) per operation, plus the loader's child span,
// span events and the Client's observable gauges; it holds the counters
// behind the Client's Stats (Counters) and classes errors (Errors).
//
// # Invariants
//
//   - One record per public operation, not per tier step: Begin when it
//     starts, End when it returns. The operation table (ops.go) is the one
//     place that names an operation: its span name, its "op" attribute and
//     whether it reads values.
//   - Nothing observed carries a key, a value or an error's text: a key
//     appears only as the owner's keyed digest (and only on a recording
//     span), an error only as its class (error.type; a loader's error text
//     may name a key). Errors (classes.go) is the one place that classes
//     an error: the observer knows the errors of the packages below the
//     owner, the owner names its own sentinels.
//   - Without providers there is no Observer: a nil *Observer's Begin is one
//     nil check, and End, Event and the counters' hooks do nothing.
//   - cachekit.operations is exact and costs an operation one striped add:
//     each Client counts in its own striped counters (opcounts.go), one per
//     attribute combination, and one callback per MeterProvider reports the
//     sum over its Clients at collection, a closed Client's counts
//     included (the counter never goes back; an operation that returns
//     after its Client's Close is not counted). It carries no exemplars.
//   - cachekit.operation.duration records one in L1Sample of the operations
//     L1 answered, one in Config.L2DurationSample (L2Sample) of those Redis
//     answered, and every failed, degraded, loading or tier-none one,
//     decided by the count's own Tick: a sampled-out operation reads the
//     clock once, not twice, and makes no Record (the SDK's costs about
//     0.4 µs).
//   - Under a valid parent span that is neither sampled nor recording no
//     span starts (the SDK's default sampler, ParentBased, would not
//     sample it): a check of ctx, no Start, no allocation, unless
//     Config.SpansUnderUnsampledParents. With neither a span nor metrics,
//     Begin returns no Call.
//   - Counters (Stats' counts) are always on, providers or not, and each
//     count is one atomic add (the L1 hits a striped one): the hot path
//     bumps them.
//   - With SDK metrics, recording allocates nothing in steady state: the
//     attribute sets are built once (per combination, on first use, shared
//     by every Client), each Client's counter of a combination is made on
//     first use, and observed calls come from a pool.
//
// The package needs nothing of cachekit.Client: the owner gives it the
// providers, a key digest, its own error sentinels (Errors) and a snapshot
// function for the gauges.
package observe
