package cachekit

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// meterName is the instrumentation scope of the Client's metrics.
const meterName = "github.com/cachekit-io/cachekit-go/cachekit"

// meters holds the instruments, created once in New, and the attribute
// options of every combination the Client records, built once so that
// recording allocates nothing. A nil *meters records nothing.
type meters struct {
	ops         metric.Int64Counter
	dur         metric.Float64Histogram
	decryptFail metric.Int64Counter
	retries     metric.Int64Counter
	swr         metric.Int64Counter
	inval       metric.Int64Counter
	brkTrans    metric.Int64Counter
	reg         metric.Registration

	opAttr         [numOpKinds][]metric.AddOption
	durAttr        [numDurKinds][]metric.RecordOption
	failL1, failL2 [3][]metric.AddOption // by failReason
	swrOK, swrFail []metric.AddOption
	brkTo          [3][]metric.AddOption // by BreakerState
}

// opKind names one (op, tier, outcome) combination of cachekit.operations.
type opKind int

const (
	opGetL1Hit opKind = iota
	opGetL1Miss
	opGetL2Hit
	opGetL2Miss
	opGetL2Err
	opGetL2Degraded
	opSetOK
	opSetErr
	opSetDegraded
	opSetL1Rejected
	opDelOK
	opDelErr
	numOpKinds
)

// opKinds lists the attributes of each opKind.
var opKinds = [numOpKinds][3]string{
	{"get", "l1", "hit"}, {"get", "l1", "miss"}, {"get", "l2", "hit"}, {"get", "l2", "miss"},
	{"get", "l2", "error"}, {"get", "l2", "degraded"},
	{"set", "l2", "ok"}, {"set", "l2", "error"}, {"set", "l2", "degraded"}, {"set", "l1", "rejected"},
	{"delete", "l2", "ok"}, {"delete", "l2", "error"},
}

// durKind names the attributes of one cachekit.operation.duration series.
type durKind int

const (
	durGetL2 durKind = iota
	durSet
	numDurKinds
)

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

func recOpt(kv ...attribute.KeyValue) []metric.RecordOption {
	return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(kv...))}
}

func opAttrs(op, tier, outcome string) []metric.AddOption {
	return addOpt(attribute.String("op", op), attribute.String("tier", tier), attribute.String("outcome", outcome))
}

// newMeters creates the instruments on mp; nil mp means metrics off.
func newMeters(mp metric.MeterProvider, c *Client) (*meters, error) {
	if mp == nil {
		return nil, nil
	}
	m := mp.Meter(meterName)
	mt := &meters{}
	var err error
	if mt.ops, err = m.Int64Counter("cachekit.operations",
		metric.WithDescription("Cache operations by op, tier and outcome")); err != nil {
		return nil, err
	}
	if mt.dur, err = m.Float64Histogram("cachekit.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of Get answered by L2 (L1 hits are counted, not timed) and of Set"),
		metric.WithExplicitBucketBoundaries(1e-6, 5e-6, 2e-5, 1e-4, 5e-4, 1e-3, 5e-3, 0.02, 0.1, 0.5, 2)); err != nil {
		return nil, err
	}
	if mt.decryptFail, err = m.Int64Counter("cachekit.decrypt.failures",
		metric.WithDescription("Entries that failed to authenticate or unwrap, by tier and reason")); err != nil {
		return nil, err
	}
	if mt.retries, err = m.Int64Counter("cachekit.l2.retries",
		metric.WithDescription("Redis operations retried after a transient error")); err != nil {
		return nil, err
	}
	if mt.swr, err = m.Int64Counter("cachekit.swr.refreshes",
		metric.WithDescription("Background stale-while-revalidate refreshes by outcome")); err != nil {
		return nil, err
	}
	if mt.inval, err = m.Int64Counter("cachekit.invalidations.applied",
		metric.WithDescription("L1 entries dropped on another instance's invalidation")); err != nil {
		return nil, err
	}
	if mt.brkTrans, err = m.Int64Counter("cachekit.breaker.transitions",
		metric.WithDescription("Circuit breaker state changes, by the state entered")); err != nil {
		return nil, err
	}
	l1Size, err := m.Int64ObservableGauge("cachekit.l1.size", metric.WithUnit("By"),
		metric.WithDescription("Sealed bytes held in L1"))
	if err != nil {
		return nil, err
	}
	l1Evict, err := m.Int64ObservableCounter("cachekit.l1.evictions",
		metric.WithDescription("L1 entries evicted to make room"))
	if err != nil {
		return nil, err
	}
	l1Reject, err := m.Int64ObservableCounter("cachekit.l1.rejections",
		metric.WithDescription("L1 writes refused by admission"))
	if err != nil {
		return nil, err
	}
	nonces, err := m.Int64ObservableCounter("cachekit.encrypt.nonces",
		metric.WithDescription("Values sealed: the nonce counter of this Client's encryptor"))
	if err != nil {
		return nil, err
	}
	keyIdx, err := m.Int64ObservableCounter("cachekit.decrypt.key_index",
		metric.WithDescription("Successful decryptions by keyring index (0 current, 1.. previous keys)"))
	if err != nil {
		return nil, err
	}
	brk, err := m.Int64ObservableGauge("cachekit.breaker.state",
		metric.WithDescription("Circuit breaker state: 0 closed, 1 open, 2 half-open"))
	if err != nil {
		return nil, err
	}
	var idxAttrs [4]metric.ObserveOption
	for i := range idxAttrs {
		idxAttrs[i] = metric.WithAttributeSet(attribute.NewSet(attribute.String("index", strconv.Itoa(i))))
	}
	mt.reg, err = m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		if c.l1 != nil {
			st := c.l1.Stats()
			o.ObserveInt64(l1Size, st.CostBytes)
			o.ObserveInt64(l1Evict, int64(st.Evictions))
			o.ObserveInt64(l1Reject, int64(st.Rejected))
		}
		if c.enc != nil {
			es := c.enc.Stats()
			o.ObserveInt64(nonces, int64(es.Encryptions))
			for i, n := range es.DecryptsByKey {
				o.ObserveInt64(keyIdx, int64(n), idxAttrs[i])
			}
		}
		if c.rel != nil && c.rel.br != nil {
			st, _ := c.rel.br.snapshot()
			o.ObserveInt64(brk, int64(st))
		}
		return nil
	}, l1Size, l1Evict, l1Reject, nonces, keyIdx, brk)
	if err != nil {
		return nil, err
	}
	for k, a := range opKinds {
		mt.opAttr[k] = opAttrs(a[0], a[1], a[2])
	}
	mt.durAttr[durGetL2] = recOpt(attribute.String("op", "get"), attribute.String("tier", "l2"))
	mt.durAttr[durSet] = recOpt(attribute.String("op", "set"), attribute.String("tier", "l2"))
	for i, r := range failReasons {
		mt.failL1[i] = addOpt(attribute.String("tier", "l1"), attribute.String("reason", r))
		mt.failL2[i] = addOpt(attribute.String("tier", "l2"), attribute.String("reason", r))
	}
	mt.swrOK = addOpt(attribute.String("outcome", "ok"))
	mt.swrFail = addOpt(attribute.String("outcome", "error"))
	for st := range mt.brkTo {
		mt.brkTo[st] = addOpt(attribute.String("to", BreakerState(st).String()))
	}
	return mt, nil
}

// add counts one operation of kind k.
func (m *meters) add(ctx context.Context, k opKind) {
	if m != nil {
		m.ops.Add(ctx, 1, m.opAttr[k]...)
	}
}

// since records the latency of an operation that started at start.
func (m *meters) since(ctx context.Context, start time.Time, k durKind) {
	if m != nil {
		m.dur.Record(ctx, time.Since(start).Seconds(), m.durAttr[k]...)
	}
}

// openFailed counts an entry of tier that failed to open.
func (m *meters) openFailed(ctx context.Context, tier Tier, err error) {
	if m == nil {
		return
	}
	r := failOther
	var fe *FormatError
	switch {
	case errors.Is(err, encryption.ErrAuthFailed):
		r = failAuth
	case errors.As(err, &fe):
		r = failFormat
	}
	if tier == TierL1 {
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
func (m *meters) breakerTransition(ctx context.Context, to BreakerState) {
	if m != nil {
		m.brkTrans.Add(ctx, 1, m.brkTo[to]...)
	}
}

func (m *meters) invalidation(ctx context.Context) {
	if m != nil {
		m.inval.Add(ctx, 1)
	}
}

// close unregisters the observable callback.
func (m *meters) close() {
	if m != nil && m.reg != nil {
		_ = m.reg.Unregister()
	}
}

// startTimer returns the start of a timed operation, or the zero time when
// metrics are off (so the hot path does not read the clock).
func (m *meters) startTimer() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}
