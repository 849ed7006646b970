package observe

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/l2"
)

var bg = context.Background()

// TestOpsTable: every operation has a span name under "cachekit." and a
// metric op; span names are unique.
func TestOpsTable(t *testing.T) {
	seen := map[string]bool{}
	for op := range numOps {
		row := ops[op]
		if !strings.HasPrefix(row.span, "cachekit.") || row.metric == "" || seen[row.span] {
			t.Fatalf("op %d: row %+v", op, row)
		}
		seen[row.span] = true
	}
}

// TestNilObserver: without providers New returns nil, and a nil Observer
// returns ctx unchanged, no Call, and records nothing without panicking.
func TestNilObserver(t *testing.T) {
	o, err := New(Config{})
	if o != nil || err != nil {
		t.Fatalf("New without providers = %v, %v", o, err)
	}
	ctx, oc := o.Begin(bg, OpGet, "k", 1)
	if ctx != bg || oc != nil || o.Tracing() {
		t.Fatal("a nil Observer started something")
	}
	o.End(ctx, oc, Result{Tier: L1}, nil)
	o.Event(ctx, "e")
	o.OpenFailed(ctx, L1, errors.New("x"))
	o.Retry(ctx)
	o.Close()
}

// TestSpanAndMetric: one read hit records a span named by the table with
// the key's digest (never the key), tier, outcome and hit, and one
// operation metric point with op, tier and outcome; a failure records its
// class as error.type.
func TestSpanAndMetric(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	o, err := New(Config{
		Tracer:   sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)),
		Meter:    sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Digest:   func(string) string { return "digest" },
		Errors:   &Errors{Degraded: func(error) bool { return false }},
		Snapshot: func() Snapshot { return Snapshot{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx, oc := o.Begin(bg, OpGetBytes, "secret-key", 1)
	o.End(ctx, oc, Result{Tier: L1, Size: 3}, nil)
	ctx, oc = o.Begin(bg, OpSet, "secret-key", 1)
	o.End(ctx, oc, Result{Tier: L2}, &l2.BackendError{Op: "set", Err: errors.New("down")})
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "cachekit.GetBytes" || spans[1].Name() != "cachekit.Set" {
		t.Fatalf("spans %v", spans)
	}
	got := map[string]string{}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "secret") {
				t.Fatalf("span %s carries the key: %v", s.Name(), kv)
			}
			got[s.Name()+" "+string(kv.Key)] = kv.Value.String()
		}
	}
	for k, v := range map[string]string{"cachekit.GetBytes cachekit.key_digest": "digest", "cachekit.GetBytes cachekit.tier": "l1",
		"cachekit.GetBytes cachekit.outcome": "hit", "cachekit.GetBytes cachekit.hit": "true",
		"cachekit.Set error.type": "redis", "cachekit.Set cachekit.outcome": "error"} {
		if got[k] != v {
			t.Fatalf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(bg, &rm); err != nil {
		t.Fatal(err)
	}
	points := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			h, ok := m.Data.(metricdata.Histogram[float64])
			if !ok || m.Name != "cachekit.operation.duration" {
				continue
			}
			for _, p := range h.DataPoints {
				op, _ := p.Attributes.Value(attribute.Key("op"))
				out, _ := p.Attributes.Value(attribute.Key("outcome"))
				if op.AsString() == "get" && out.AsString() == "hit" && p.Count == 1 {
					points++
				}
			}
		}
	}
	if points == 0 {
		t.Fatal("no operation.duration point for the get hit")
	}
}

// TestErrorsClassAndOutcome: the owner's sentinels and the errors of the
// packages below it each get their class, in the order that decides a
// wrapped mix (the caller's context before a Redis failure); a degraded
// read and a miss are outcomes, not classes.
func TestErrorsClassAndOutcome(t *testing.T) {
	notFound, closed, invalid := errors.New("nf"), errors.New("closed"), errors.New("bad input")
	degraded, unknown := errors.New("degraded"), errors.New("outcome unknown")
	e := &Errors{NotFound: notFound, Closed: closed, Invalid: []error{invalid}, OutcomeUnknown: unknown,
		Degraded: func(err error) bool { return errors.Is(err, degraded) }}
	backend := &l2.BackendError{Op: "get", Err: errors.New("down")}
	for _, c := range []struct {
		err  error
		want Class
	}{
		{context.Canceled, Canceled},
		{&l2.BackendError{Op: "get", Err: context.DeadlineExceeded}, Deadline},
		{closed, Closed},
		{l2.ErrWrongType, WrongType},
		{backend, Redis},
		{invalid, Invalid},
		{errors.New("else"), Other},
		{errors.Join(unknown, &l2.BackendError{Op: "set", Err: errors.New("i/o timeout")}), OutcomeUnknown},
		// The caller's own deadline keeps its class on an unknown write.
		{errors.Join(unknown, &l2.BackendError{Op: "set", Err: context.DeadlineExceeded}), Deadline},
	} {
		if got := e.Class(c.err); got != c.want {
			t.Errorf("Class(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if out, class := e.Outcome(errors.Join(degraded, notFound)); out != Degraded || class != NoClass {
		t.Errorf("degraded read: %v %v", out, class)
	}
	if out, class := e.Outcome(notFound); out != Miss || class != NoClass {
		t.Errorf("miss: %v %v", out, class)
	}
	if out, class := e.Outcome(backend); out != Failed || class != Redis {
		t.Errorf("failure: %v %v", out, class)
	}
	if c := (&Errors{}).Class(context.Canceled); c != Canceled {
		t.Errorf("without an OutcomeUnknown error: %v", c)
	}
	if OutcomeUnknown.String() != "outcome_unknown" || outcomeNames[NegativeHit] != "negative_hit" {
		t.Errorf("reserved values: %q, %q", OutcomeUnknown.String(), outcomeNames[NegativeHit])
	}
}

// TestLimiterOnePerInterval: the first event passes, the next only once
// the interval has passed since the last that passed.
func TestLimiterOnePerInterval(t *testing.T) {
	var l Limiter
	t0 := time.Unix(1000, 0)
	for i, c := range []struct {
		at   time.Duration
		want bool
	}{{0, true}, {time.Second, false}, {10 * time.Second, true}, {15 * time.Second, false}, {20 * time.Second, true}} {
		if got := l.Allow(t0.Add(c.at), 10*time.Second); got != c.want {
			t.Fatalf("event %d at +%v: Allow = %v, want %v", i, c.at, got, c.want)
		}
	}
}

// TestDigesterFor: a static master key gives every process the same
// digests (the default tenant when none is set); a KeyProvider or no
// encryption a random key.
func TestDigesterFor(t *testing.T) {
	key := make([]byte, 32)
	a := DigesterFor(&encryption.Config{MasterKey: key})
	b := DigesterFor(&encryption.Config{MasterKey: key, Tenant: encryption.DefaultTenant})
	if a.Digest("k") != b.Digest("k") {
		t.Fatal("the same key and tenant gave different digests")
	}
	r := DigesterFor(nil)
	if r.Digest("k") == a.Digest("k") {
		t.Fatal("no encryption digested with the master key's digest key")
	}
}

// metricsOf collects reader and returns every instrument's data.
func metricsOf(t *testing.T, reader *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(bg, &rm); err != nil {
		t.Fatal(err)
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

// collectOps returns the reader's cachekit.operations values and
// cachekit.operation.duration counts, by their attributes' encoding.
func collectOps(t *testing.T, reader *sdkmetric.ManualReader) (ops, dur map[string]int64) {
	t.Helper()
	ops, dur = map[string]int64{}, map[string]int64{}
	for _, m := range metricsOf(t, reader) {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			if m.Name == "cachekit.operations" {
				for _, p := range d.DataPoints {
					ops[p.Attributes.Encoded(attribute.DefaultEncoder())] += p.Value
				}
			}
		case metricdata.Histogram[float64]:
			if m.Name == "cachekit.operation.duration" {
				for _, p := range d.DataPoints {
					dur[p.Attributes.Encoded(attribute.DefaultEncoder())] += int64(p.Count)
				}
			}
		}
	}
	return ops, dur
}

// meteredObserver is an Observer with metrics on mp.
func meteredObserver(t *testing.T, mp *sdkmetric.MeterProvider, l2Sample int) *Observer {
	t.Helper()
	o, err := New(Config{Meter: mp, Errors: &Errors{Degraded: func(error) bool { return false }},
		Snapshot: func() Snapshot { return Snapshot{} }, L2DurationSample: l2Sample})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

const (
	getHitL1 = "op=get,outcome=hit,tier=l1"
	getHitL2 = "op=get,outcome=hit,tier=l2"
)

// TestDurationSampled: every operation is counted; of those L1 answered
// one in L1Sample is timed (the first, then every L1Sample-th of one
// goroutine), of those Redis answered one in L2Sample, and every failed,
// degraded and loaded one; with L2DurationSample 1 every Redis answer.
func TestDurationSampled(t *testing.T) {
	const (
		n          = 3*L1Sample + 10
		getFailL2  = "error.type=other,op=get,outcome=error,tier=l2"
		getDegrL2  = "op=get,outcome=degraded,tier=l2"
		mgetLoaded = "op=mget_or_load,outcome=loaded,tier=l2"
	)
	for _, every := range []int{0, 1, 5} {
		reader := sdkmetric.NewManualReader()
		o := meteredObserver(t, sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), every)
		for range n {
			for _, r := range []Result{{Tier: L1}, {Tier: L2}, {Tier: L2, Out: Degraded}} {
				ctx, oc := o.Begin(bg, OpGet, "k", 1)
				o.End(ctx, oc, r, nil)
			}
			ctx, oc := o.Begin(bg, OpGet, "k", 1)
			o.End(ctx, oc, Result{Tier: L2}, errors.New("redis said no"))
			ctx, oc = o.Begin(bg, OpMGetOrLoad, "", 2)
			o.End(ctx, oc, Result{Tier: L2, Out: Loaded}, nil)
		}
		ops, dur := collectOps(t, reader)
		o.Close()
		for _, k := range []string{getHitL1, getHitL2, getFailL2, getDegrL2, mgetLoaded} {
			if ops[k] != n {
				t.Fatalf("L2DurationSample %d: operations %s = %d, want %d (all: %v)", every, k, ops[k], n, ops)
			}
		}
		k := map[int]int64{0: L2Sample, 1: 1, 5: 5}[every]
		want := map[string]int64{getHitL1: (n-1)/L1Sample + 1, getHitL2: (n-1)/k + 1, getFailL2: n, getDegrL2: n, mgetLoaded: n}
		for key, w := range want {
			if dur[key] != w {
				t.Errorf("L2DurationSample %d: duration count %s = %d, want %d", every, key, dur[key], w)
			}
		}
	}
}

// TestOperationsAddUpOnOneProvider: two Observers on one MeterProvider
// report the sum of their counts under one attribute set; one's Close
// leaves the sum where it was (no counter going back), and the other's
// later counts add to it; once both are closed the series ends.
func TestOperationsAddUpOnOneProvider(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	a, b := meteredObserver(t, mp, 0), meteredObserver(t, mp, 0)
	hit := func(o *Observer, times int) {
		for range times {
			ctx, oc := o.Begin(bg, OpGet, "k", 1)
			o.End(ctx, oc, Result{Tier: L1}, nil)
		}
	}
	hit(a, 3)
	hit(b, 5)
	if ops, _ := collectOps(t, reader); ops[getHitL1] != 8 {
		t.Fatalf("two observers: %d, want 8 (all: %v)", ops[getHitL1], ops)
	}
	a.Close()
	if ops, _ := collectOps(t, reader); ops[getHitL1] != 8 {
		t.Fatalf("after one Close: %d, want 8 (the closed one's counts stay)", ops[getHitL1])
	}
	a.Close() // idempotent: its counts are not added twice
	hit(b, 2)
	if ops, _ := collectOps(t, reader); ops[getHitL1] != 10 {
		t.Fatalf("after 2 more: %d, want 10", ops[getHitL1])
	}
	b.Close()
	if ops, _ := collectOps(t, reader); len(ops) != 0 {
		t.Fatalf("every observer closed, still reported: %v", ops)
	}
	c := meteredObserver(t, mp, 0) // a new Client on the provider starts a new series
	defer c.Close()
	hit(c, 1)
	if ops, _ := collectOps(t, reader); ops[getHitL1] != 1 {
		t.Fatalf("a new observer after all closed: %d, want 1", ops[getHitL1])
	}
}

// parentCtx returns bg carrying a remote parent span context, sampled or
// not.
func parentCtx(sampled bool) context.Context {
	cfg := trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{2}, Remote: true}
	if sampled {
		cfg.TraceFlags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(bg, trace.NewSpanContext(cfg))
}

// recordOnly samples nothing but records every span.
type recordOnly struct{}

func (recordOnly) ShouldSample(sdktrace.SamplingParameters) sdktrace.SamplingResult {
	return sdktrace.SamplingResult{Decision: sdktrace.RecordOnly}
}
func (recordOnly) Description() string { return "recordOnly" }

// TestUnsampledParentStartsNoSpan: under a valid parent that is neither
// sampled nor recording, Begin starts no span (it returns ctx as it is,
// and no Call without metrics), even for a sampler that would sample the
// child; SpansUnderUnsampledParents starts it. A root call, a sampled
// parent and a recording parent each get their span.
func TestUnsampledParentStartsNoSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	newObs := func(all bool) *Observer {
		o, err := New(Config{Tracer: tp, Digest: func(string) string { return "d" }, SpansUnderUnsampledParents: all,
			Errors: &Errors{Degraded: func(error) bool { return false }}})
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := newObs(false)
	unsampled := parentCtx(false)
	ctx, oc := o.Begin(unsampled, OpGet, "k", 1)
	if ctx != unsampled || oc != nil {
		t.Fatal("an unsampled parent: Begin started something")
	}
	o.End(ctx, oc, Result{Tier: L1}, nil)
	if n := len(rec.Ended()); n != 0 {
		t.Fatalf("an unsampled parent: %d spans, want 0", n)
	}
	recording, parent := sdktrace.NewTracerProvider(sdktrace.WithSampler(recordOnly{})).Tracer("t").Start(bg, "parent")
	defer parent.End()
	for i, ctx := range []context.Context{bg, parentCtx(true), recording} {
		ctx, oc := o.Begin(ctx, OpGet, "k", 1)
		o.End(ctx, oc, Result{Tier: L1}, nil)
		if n := len(rec.Ended()); n != i+1 {
			t.Fatalf("case %d (root, sampled parent, recording parent): %d spans, want %d", i, n, i+1)
		}
	}
	all := newObs(true)
	ctx, oc = all.Begin(unsampled, OpGet, "k", 1)
	all.End(ctx, oc, Result{Tier: L1}, nil)
	if n := len(rec.Ended()); n != 4 {
		t.Fatalf("SpansUnderUnsampledParents under an unsampled parent: %d spans, want 4", n)
	}
}

// TestDescriptionsSayWhatADashboardKeeps: every instrument's description
// says whether its points carry exemplars and how two Clients on one
// MeterProvider add up.
func TestDescriptionsSayWhatADashboardKeeps(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	o, err := New(Config{Meter: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Errors: &Errors{Degraded: func(error) bool { return false }},
		Snapshot: func() Snapshot {
			return Snapshot{HasL1: true, HasEncryption: true, HasGuard: true, HasInvalidation: true}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	ctx, oc := o.Begin(bg, OpGet, "k", 1)
	o.End(ctx, oc, Result{Tier: L1}, nil)
	_, done := o.StartLoad(bg, func(error) bool { return false })
	done(nil)
	o.OpenFailed(bg, L1, errors.New("x"))
	o.Retry(bg)
	o.SWRRefresh(bg, true)
	o.BreakerTransition(bg, 1)
	o.Invalidation(bg)
	all := metricsOf(t, reader)
	for _, m := range all {
		if !strings.Contains(m.Description, "exemplars") || !strings.Contains(m.Description, "Client") {
			t.Errorf("%s: description %q says nothing of exemplars or of several Clients", m.Name, m.Description)
		}
		if m.Name == "cachekit.operation.duration" && (!strings.Contains(m.Description, "one in "+strconv.Itoa(L1Sample)) ||
			!strings.Contains(m.Description, "L2DurationSample (default "+strconv.Itoa(L2Sample)+")")) {
			t.Errorf("%s: description %q does not give the samplings, one in %d and L2DurationSample's default %d", m.Name, m.Description, L1Sample, L2Sample)
		}
	}
	if len(all) != 23 {
		t.Errorf("%d instruments collected, want all 23", len(all))
	}
}

// TestCloseDuringCollection: Observers on one MeterProvider close (the last
// one unregistering the callback) while collections run: no deadlock
// between the SDK's lock, held while it calls the callback, and the
// callback's own.
func TestCloseDuringCollection(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	stop, collected := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(collected)
		for {
			select {
			case <-stop:
				return
			default:
				var rm metricdata.ResourceMetrics
				_ = reader.Collect(bg, &rm)
			}
		}
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 300 {
			o, err := New(Config{Meter: mp, Errors: &Errors{Degraded: func(error) bool { return false }},
				Snapshot: func() Snapshot { return Snapshot{} }})
			if err != nil {
				t.Error(err)
				return
			}
			ctx, oc := o.Begin(bg, OpGet, "k", 1)
			o.End(ctx, oc, Result{Tier: L1}, nil)
			o.Close()
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("300 Observers closing during collections did not finish in 30 s: a deadlock")
	}
	close(stop)
	<-collected
}
