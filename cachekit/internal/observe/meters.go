package observe

import (
	"context"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
)

// meters holds the instruments, created once in New, and the attribute
// options the Client records with, built once (the per-operation ones on
// first use) so that recording allocates nothing. A nil *meters records
// nothing.
type meters struct {
	counts      opCounts  // cachekit.operations, reported by totals
	totals      *opTotals // the callback that reports counts, shared on mp
	mp          metric.MeterProvider
	dur         metric.Float64Histogram
	loads       metric.Int64Counter
	loadDur     metric.Float64Histogram
	decryptFail metric.Int64Counter
	retries     metric.Int64Counter
	swr         metric.Int64Counter
	inval       metric.Int64Counter
	brkTrans    metric.Int64Counter
	reg         metric.Registration

	loadSets       [numLoadOutcomes]attrOpts
	failL1, failL2 [3][]metric.AddOption // by failReason
	swrOK, swrFail []metric.AddOption
	brkTo          [3][]metric.AddOption // by guard.State
	l2Sample       uint64                // one in l2Sample of tier l2's successes is recorded
}

// L1Sample is the sampling of cachekit.operation.duration for operations
// L1 answered (tier l1, no Redis round trip): one in L1Sample of them is
// timed and recorded, the first, then every L1Sample-th of each
// combination's counter cell (the counter's Tick, so sampling costs
// nothing more).
const L1Sample = 64

// L2Sample is the default sampling of cachekit.operation.duration for
// operations Redis answered (Config.L2DurationSample), counted as L1Sample
// is. Failed and degraded operations, loads and those that reached no tier
// are all recorded.
const L2Sample = 8

// attrOpts is one attribute set as the options a counter, a histogram and
// an observable instrument take.
type attrOpts struct {
	add []metric.AddOption
	rec []metric.RecordOption
	obs []metric.ObserveOption
}

func newAttrOpts(kv ...attribute.KeyValue) *attrOpts {
	set := attribute.NewSet(kv...)
	return &attrOpts{add: []metric.AddOption{metric.WithAttributeSet(set)}, rec: []metric.RecordOption{metric.WithAttributeSet(set)},
		obs: []metric.ObserveOption{metric.WithAttributeSet(set)}}
}

// Decrypt/open failure reasons, as the "reason" attribute.
const (
	failAuth = iota
	failFormat
	failOther
)

var failReasons = [3]string{"auth", "format", "other"}

func addOpt(kv ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

// newMeters creates the instruments on mp; nil mp means metrics off.
func newMeters(mp metric.MeterProvider, snapshot func() Snapshot, l2Sample int) (*meters, error) {
	if mp == nil {
		return nil, nil
	}
	m := mp.Meter(Scope, metric.WithInstrumentationVersion(ModuleVersion()))
	mt := &meters{mp: mp, l2Sample: L2Sample}
	if l2Sample > 0 {
		mt.l2Sample = uint64(l2Sample)
	}
	var err error
	if mt.dur, err = m.Float64Histogram("cachekit.operation.duration", metric.WithUnit("s"),
		metric.WithDescription(durDescription),
		metric.WithExplicitBucketBoundaries(1e-6, 5e-6, 2e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.02, 0.1, 0.5, 2)); err != nil {
		return nil, err
	}
	if mt.loads, err = m.Int64Counter("cachekit.loader.calls",
		metric.WithDescription("Loader runs (GetOrLoad, MGetOrLoad, SWR refreshes) by outcome"+descRecorded)); err != nil {
		return nil, err
	}
	if mt.loadDur, err = m.Float64Histogram("cachekit.loader.duration", metric.WithUnit("s"),
		metric.WithDescription("Loader run time by outcome"+descRecorded),
		metric.WithExplicitBucketBoundaries(1e-4, 1e-3, 5e-3, 0.02, 0.1, 0.5, 2, 10)); err != nil {
		return nil, err
	}
	if mt.decryptFail, err = m.Int64Counter("cachekit.decrypt.failures",
		metric.WithDescription("Entries that failed to authenticate or unwrap, by tier and reason"+descRecorded)); err != nil {
		return nil, err
	}
	if mt.retries, err = m.Int64Counter("cachekit.l2.retries",
		metric.WithDescription("Redis operations retried after a transient error"+descRecorded)); err != nil {
		return nil, err
	}
	if mt.swr, err = m.Int64Counter("cachekit.swr.refreshes",
		metric.WithDescription("Background stale-while-revalidate refreshes by outcome"+descRecorded)); err != nil {
		return nil, err
	}
	if mt.inval, err = m.Int64Counter("cachekit.invalidations.applied",
		metric.WithDescription("L1 entries dropped on another instance's invalidation"+descRecorded)); err != nil {
		return nil, err
	}
	if mt.brkTrans, err = m.Int64Counter("cachekit.breaker.transitions",
		metric.WithDescription("Circuit breaker state changes, by the state entered"+descRecorded)); err != nil {
		return nil, err
	}
	l1Size, err := m.Int64ObservableGauge("cachekit.l1.size", metric.WithUnit("By"),
		metric.WithDescription("Bytes L1 charges for its entries: sealed bytes plus per-entry overhead"+descGauge))
	if err != nil {
		return nil, err
	}
	l1Evict, err := m.Int64ObservableCounter("cachekit.l1.evictions",
		metric.WithDescription("L1 entries evicted to make room"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	l1Reject, err := m.Int64ObservableCounter("cachekit.l1.rejections",
		metric.WithDescription("L1 writes refused by admission"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	nonces, err := m.Int64ObservableCounter("cachekit.encrypt.nonces",
		metric.WithDescription("Values sealed: the nonce counter of this Client's encryptor"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	keyIdx, err := m.Int64ObservableCounter("cachekit.decrypt.key_index",
		metric.WithDescription("Successful decryptions by keyring index (0 current, 1.. previous keys)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	brk, err := m.Int64ObservableGauge("cachekit.breaker.state",
		metric.WithDescription("Circuit breaker state: 0 closed, 1 open, 2 half-open"+descGauge))
	if err != nil {
		return nil, err
	}
	invLosses, err := m.Int64ObservableCounter("cachekit.invalidation.losses",
		metric.WithDescription("Times invalidation tracking was lost (L1 flushed and bypassed until it is back)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	invTracking, err := m.Int64ObservableGauge("cachekit.invalidation.tracking",
		metric.WithDescription("1 while every Redis node is tracked (L1 in use), 0 while tracking is down"+descGauge))
	if err != nil {
		return nil, err
	}
	invPubFail, err := m.Int64ObservableCounter("cachekit.invalidation.publish_failures",
		metric.WithDescription("Writes whose invalidation message could not be published (the value was stored)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	invMode, err := m.Int64ObservableGauge("cachekit.invalidation.mode",
		metric.WithDescription("What keeps L1 coherent: 0 none (L1 bypassed), 1 tracking, 2 pubsub fallback (tracking refused), 3 lifetime only"+descGauge))
	if err != nil {
		return nil, err
	}
	invRefusals, err := m.Int64ObservableCounter("cachekit.invalidation.refusals",
		metric.WithDescription("Times redis refused CLIENT TRACKING or the fallback's SUBSCRIBE (once until it is allowed again)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	refused, err := m.Int64ObservableCounter("cachekit.breaker.refused",
		metric.WithDescription("Redis calls the open circuit breaker refused"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	shed, err := m.Int64ObservableCounter("cachekit.l2.shed",
		metric.WithDescription("Redis calls refused by backpressure (MaxInFlight)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	degraded, err := m.Int64ObservableCounter("cachekit.l2.degraded",
		metric.WithDescription("Redis failures FailOpen absorbed (reads turned into misses, writes absorbed)"+descObservedCounter))
	if err != nil {
		return nil, err
	}
	var idxAttrs [4]metric.ObserveOption
	for i := range idxAttrs {
		idxAttrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("index", strconv.Itoa(i))))
	}
	mt.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := snapshot()
		if st.HasL1 {
			o.ObserveInt64(l1Size, st.L1Bytes)
			o.ObserveInt64(l1Evict, int64(st.L1Evictions))
			o.ObserveInt64(l1Reject, int64(st.L1Rejected))
		}
		if st.HasEncryption {
			o.ObserveInt64(nonces, int64(st.Encryptions))
			for i, n := range st.DecryptsByKey {
				o.ObserveInt64(keyIdx, int64(n), idxAttrs[i])
			}
		}
		if st.HasGuard {
			o.ObserveInt64(brk, int64(st.Breaker))
			o.ObserveInt64(refused, int64(st.Refused))
			o.ObserveInt64(shed, int64(st.Shed))
			o.ObserveInt64(degraded, int64(st.Degraded))
		}
		if st.HasInvalidation {
			o.ObserveInt64(invLosses, int64(st.InvalidationLosses))
			o.ObserveInt64(invPubFail, int64(st.PublishFailures))
			tracking := int64(0)
			if st.Tracking {
				tracking = 1
			}
			o.ObserveInt64(invTracking, tracking)
			o.ObserveInt64(invMode, int64(st.InvalidationMode))
			o.ObserveInt64(invRefusals, int64(st.InvalidationRefusals))
		}
		return nil
	}, l1Size, l1Evict, l1Reject, nonces, keyIdx, brk, invLosses, invTracking, invPubFail, invMode, invRefusals, refused, shed, degraded)
	if err != nil {
		return nil, err
	}
	for i, n := range loadNames {
		mt.loadSets[i] = *newAttrOpts(attribute.String("outcome", n))
	}
	if mt.totals, err = joinTotals(mp, m, &mt.counts); err != nil {
		_ = mt.reg.Unregister()
		return nil, err
	}
	for i, r := range failReasons {
		mt.failL1[i] = addOpt(attribute.String("tier", "l1"), attribute.String("reason", r))
		mt.failL2[i] = addOpt(attribute.String("tier", "l2"), attribute.String("reason", r))
	}
	mt.swrOK = addOpt(attribute.String("outcome", "ok"))
	mt.swrFail = addOpt(attribute.String("outcome", "error"))
	for st := range mt.brkTo {
		mt.brkTo[st] = addOpt(attribute.String("to", guard.State(st).String()))
	}
	return mt, nil
}

// What each instrument's description adds about what a dashboard keeps and
// loses: whether its points carry exemplars and how the Clients on one
// MeterProvider add up (cachekit.operations and cachekit.operation.duration
// say it in their own descriptions).
const (
	descRecorded        = ". Recorded as it happens: exemplars link points to sampled traces; the Clients on one MeterProvider add up"
	descObservedCounter = ". Read at collection: no exemplars; each Client reports its own, the SDK adds them, and a closed Client's share leaves the sum"
	descGauge           = ". Read at collection: no exemplars; with several Clients on one MeterProvider, one Client's value"
)

// durDescription is cachekit.operation.duration's description: what a
// dashboard gets from it.
const durDescription = "Latency of public operations by op, tier, outcome and error.type, sampled:" +
	" of those L1 answered (tier l1) one in 64 is recorded; of those Redis answered (tier l2, outcome hit, miss, ok, not_stored, negative_hit)" +
	" one in the Client's L2DurationSample (default 8); every other one (errors, degraded, loaded, tier none)." +
	" A count is no rate (use cachekit.operations); take quantiles per tier and outcome, as a quantile across them mixes samplings." +
	" Recorded points keep exemplars linking them to sampled traces; the Clients on one MeterProvider add up"

// l2Sampled marks the outcomes of tier l2 that L2Sample samples: Redis
// answered and no loader ran. A failure, FailOpen's degraded read and a
// load are recorded every time.
var l2Sampled = [numOutcomes]bool{OK: true, Hit: true, Miss: true, NotStored: true, NegativeHit: true}

// recordOp counts one public operation that began at start (since epoch)
// and records its duration: one in L1Sample of those L1 answered, one in
// l2Sample of those Redis answered (l2Sampled), every other one (the
// counter's Tick decides; n%k == 1%k keeps the first of a cell and then
// every k-th, and every one when k is 1). Each attribute combination's
// counter is made the first time it is seen.
func (m *meters) recordOp(ctx context.Context, op Op, tier Tier, out Outcome, class Class, start time.Duration) {
	i := combo(op, tier, out, class)
	s := m.counts.slots[i].Load()
	if s == nil {
		s = m.counts.slot(i)
	}
	n := s.n.Tick()
	switch {
	case tier == L1:
		if n%L1Sample != 1 {
			return
		}
	case tier == L2 && l2Sampled[out]:
		if n%m.l2Sample != 1%m.l2Sample {
			return
		}
	}
	m.dur.Record(ctx, (time.Since(epoch) - start).Seconds(), s.set.rec...)
}

// recordLoad counts one loader run and records how long it took.
func (m *meters) recordLoad(ctx context.Context, out loadOutcome, d time.Duration) {
	m.loads.Add(ctx, 1, m.loadSets[out].add...)
	m.loadDur.Record(ctx, d.Seconds(), m.loadSets[out].rec...)
}

// openFailed counts an entry of tier that failed to open for reason r.
func (m *meters) openFailed(ctx context.Context, tier Tier, r int) {
	if m == nil {
		return
	}
	if tier == L1 {
		m.decryptFail.Add(ctx, 1, m.failL1[r]...)
	} else {
		m.decryptFail.Add(ctx, 1, m.failL2[r]...)
	}
}

func (m *meters) retry(ctx context.Context) {
	if m != nil {
		m.retries.Add(ctx, 1)
	}
}

func (m *meters) swrRefresh(ctx context.Context, ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.swr.Add(ctx, 1, m.swrOK...)
	} else {
		m.swr.Add(ctx, 1, m.swrFail...)
	}
}

// breakerTransition counts the breaker entering state to.
func (m *meters) breakerTransition(ctx context.Context, to int) {
	if m != nil {
		m.brkTrans.Add(ctx, 1, m.brkTo[to]...)
	}
}

func (m *meters) invalidation(ctx context.Context) {
	if m != nil {
		m.inval.Add(ctx, 1)
	}
}

// close unregisters the observable callback and leaves the operation
// counts to the provider's totals.
func (m *meters) close() {
	if m == nil {
		return
	}
	if m.reg != nil {
		_ = m.reg.Unregister()
	}
	m.totals.leave(m.mp, &m.counts)
}
