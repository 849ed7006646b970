package cachekit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// meterProvider returns an SDK MeterProvider (shut down at cleanup) and the
// manual reader that collect reads its data points from.
func meterProvider(tb testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tb.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, reader
}

// collect returns every data point of the reader as "name{attrs}" -> value.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]float64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		out["scope "+sm.Scope.Name+"@"+sm.Scope.Version] = 1
	}
	key := func(name string, s attribute.Set) string {
		return name + "{" + s.Encoded(attribute.DefaultEncoder()) + "}"
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[key(m.Name, p.Attributes)] = float64(p.Count)
				}
			}
		}
	}
	return out
}

// TestMetricsRecorded: every public operation and the loader are counted
// once, by op, the tier that answered or took it, the outcome and, for
// errors, the class a caller would branch on, and timed (with
// L2DurationSample 1 every one that reached Redis or ran a loader, the
// first of those L1 answered); the scope carries the module's version.
func TestMetricsRecorded(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	mp, reader := meterProvider(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), MeterProvider: mp, Reliability: &Reliability{},
		L2DurationSample: 1})
	mustSet(t, c, "k", "v")
	for range 3 {
		if _, err := Get[string](bg, c, "k"); err != nil { // L1 hits
			t.Fatal(err)
		}
	}
	if _, err := Get[string](bg, c, "absent"); err != ErrNotFound {
		t.Fatal(err)
	}
	// A tampered L2 entry: one auth failure at tier l2.
	if err := rdb.Set(bg, "bad", bytes.Repeat([]byte{1}, 40), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	_, _ = Get[string](bg, c, "bad")
	mustSetTTL(t, c, "n", 5, time.Minute)
	if _, err := c.GetBytes(bg, "n"); !errors.Is(err, ErrNotBytes) {
		t.Fatalf("GetBytes of an int = %v, want ErrNotBytes", err)
	}
	_ = c.Get(bg, "k", nil) // invalid destination
	if err := MSet(bg, c, map[string]int{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	c.FlushLocal()
	if m, err := MGet[int](bg, c, []string{"a", "b", "zz"}); err != nil || len(m) != 2 {
		t.Fatal(m, err)
	}
	if m, err := MGet[int](bg, c, []string{"none1", "none2"}); err != nil || len(m) != 0 {
		t.Fatal(m, err)
	}
	if ok, err := c.SetIfAbsent(bg, "a", 9, time.Minute); ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, err := c.Exists(bg, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TTL(bg, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Touch(bg, "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	load := func(context.Context) (string, error) { return "loaded", nil }
	if _, err := GetOrLoad(bg, c, "fresh", load); err != nil { // loads
		t.Fatal(err)
	}
	if _, err := GetOrLoad(bg, c, "fresh", load); err != nil { // L1 hit
		t.Fatal(err)
	}
	boom := errors.New("upstream down")
	if _, err := GetOrLoad(bg, c, "failing", func(context.Context) (string, error) { return "", boom }); err != boom {
		t.Fatalf("GetOrLoad returned %v, want the loader's own error", err)
	}
	if _, err := GetOrLoad(bg, c, "panics", func(context.Context) (string, error) { panic("loader bug") }); err == nil {
		t.Fatal("a panicking loader returned no error")
	}
	if _, err := MGetOrLoad(bg, c, []string{"a", "m1"}, func(_ context.Context, missing []string) (map[string]int, error) {
		return map[string]int{"m1": 1}, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	want := map[string]float64{
		"cachekit.operations{op=get,outcome=hit,tier=l1}":                                       3,
		"cachekit.operations{op=get,outcome=miss,tier=l2}":                                      1,
		"cachekit.operations{error.type=auth_failed,op=get,outcome=error,tier=l2}":              1,
		"cachekit.operations{error.type=invalid_argument,op=get,outcome=error,tier=l1}":         1, // GetBytes of an int (an L1 hit)
		"cachekit.operations{error.type=invalid_argument,op=get,outcome=error,tier=none}":       1, // nil destination
		"cachekit.operations{op=set,outcome=ok,tier=l2}":                                        2,
		"cachekit.operations{op=mset,outcome=ok,tier=l2}":                                       1,
		"cachekit.operations{op=mget,outcome=hit,tier=l2}":                                      1,
		"cachekit.operations{op=mget,outcome=miss,tier=l2}":                                     1,
		"cachekit.operations{op=set_if_absent,outcome=not_stored,tier=l2}":                      1,
		"cachekit.operations{op=exists,outcome=ok,tier=l1}":                                     1,
		"cachekit.operations{op=ttl,outcome=ok,tier=l2}":                                        1,
		"cachekit.operations{op=touch,outcome=ok,tier=l2}":                                      1,
		"cachekit.operations{op=get_or_load,outcome=loaded,tier=none}":                          1,
		"cachekit.operations{op=get_or_load,outcome=hit,tier=l1}":                               1,
		"cachekit.operations{error.type=loader,op=get_or_load,outcome=error,tier=none}":         2, // the loader error and the panic
		"cachekit.operations{op=mget_or_load,outcome=loaded,tier=l2}":                           1,
		"cachekit.operations{op=delete,outcome=ok,tier=l2}":                                     1,
		"cachekit.operation.duration{op=set,outcome=ok,tier=l2}":                                2,
		"cachekit.operation.duration{op=get,outcome=hit,tier=l1}":                               1, // one in 64 L1 answers, the first
		"cachekit.operation.duration{op=get,outcome=miss,tier=l2}":                              1, // every Redis round trip
		"cachekit.operation.duration{error.type=loader,op=get_or_load,outcome=error,tier=none}": 2,
		"cachekit.loader.calls{outcome=ok}":                                                     2,
		"cachekit.loader.calls{outcome=error}":                                                  2, // the loader error and the panic
		"cachekit.loader.duration{outcome=ok}":                                                  2,
		"cachekit.decrypt.failures{reason=auth,tier=l2}":                                        1,
		"cachekit.encrypt.nonces{}":                                                             7,
		"cachekit.breaker.state{}":                                                              0,
		"scope github.com/cachekit-io/cachekit-go/cachekit@" + observe.ModuleVersion():          1,
	}
	if observe.ModuleVersion() == "" {
		t.Error("the instrumentation scope has no version")
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	for _, k := range []string{"cachekit.l1.size{}", "cachekit.l1.evictions{}", "cachekit.l1.rejections{}"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s not observed", k)
		}
	}
	if t.Failed() {
		t.Logf("collected: %v", got)
	}
}

// By default one in observe.L2Sample of the operations Redis answered is
// timed (the first, then every 8th of each counter cell, of which one
// goroutine uses one or, if its stack moves, a few); cachekit.operations
// counts them all.
func TestL2DurationSampledByDefault(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	mp, reader := meterProvider(t)
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig(""), MeterProvider: mp})
	const n = 400
	for range n {
		if _, err := Get[string](bg, c, "absent"); !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	got := collect(t, reader)
	const miss = "{op=get,outcome=miss,tier=l2}"
	if ops := got["cachekit.operations"+miss]; ops != n {
		t.Fatalf("cachekit.operations%s = %v, want %d", miss, ops, n)
	}
	lo, hi := float64(n/observe.L2Sample), float64(n/observe.L2Sample+16)
	if d := got["cachekit.operation.duration"+miss]; d < lo || d > hi {
		t.Fatalf("cachekit.operation.duration%s count = %v, want one in %d: %v-%v", miss, d, observe.L2Sample, lo, hi)
	}
	t.Logf("%d misses from Redis: %v timed", n, got["cachekit.operation.duration"+miss])
}

// The hot-path budget holds with an explicit no-op MeterProvider too.
func TestAllocsEncryptedAppendValueL1HitNoopMetrics(t *testing.T) {
	// Not parallel: counts allocations.
	c := assertL1HitAllocatesNothing(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), MeterProvider: noop.NewMeterProvider()})
	if c.obs == nil {
		t.Fatal("metrics not set up with an explicit provider")
	}
}

// With the OpenTelemetry SDK recording, the L1 hit stays allocation-free:
// counters and histograms record with prebuilt attribute sets.
func TestAllocsEncryptedAppendValueL1HitSDKMetrics(t *testing.T) {
	// Not parallel: counts allocations.
	mp, _ := meterProvider(t)
	assertL1HitAllocatesNothing(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), MeterProvider: mp})
}

// BenchmarkGetL1HitMetrics: an encrypted L1 hit with no provider, with
// metrics (no-op and SDK) and with spans (recorded; a root call the
// sampler drops; a call under an unsampled parent, the default sampler).
func BenchmarkGetL1HitMetrics(b *testing.B) {
	unsampled := trace.ContextWithRemoteSpanContext(bg, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}))
	providers := []struct {
		name string
		ctx  context.Context
		opts func(b *testing.B) Options
	}{
		{"off", bg, func(*testing.B) Options { return Options{} }},
		{"noop", bg, func(*testing.B) Options { return Options{MeterProvider: noop.NewMeterProvider()} }},
		{"sdk", bg, func(b *testing.B) Options {
			mp, _ := meterProvider(b)
			return Options{MeterProvider: mp}
		}},
		// A recording tracer that exports nowhere: the cost of building
		// and ending the span itself.
		{"tracer-sdk", bg, func(b *testing.B) Options {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return Options{TracerProvider: tp}
		}},
		// A root call whose span the sampler drops: Start runs.
		{"tracer-unsampled", bg, func(b *testing.B) Options {
			tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return Options{TracerProvider: tp}
		}},
		// A call under an unsampled parent, the SDK's default sampler
		// (ParentBased): no Start.
		{"tracer-parent-unsampled", unsampled, func(b *testing.B) Options {
			tp := sdktrace.NewTracerProvider()
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			return Options{TracerProvider: tp}
		}},
	}
	for _, p := range providers {
		b.Run(p.name+"/encrypted/bytes/100B", func(b *testing.B) {
			o := p.opts(b)
			o.L1MaxBytes, o.Encryption = 64<<20, encConfig("")
			c := newClient(b, o)
			if err := c.SetWithTTL(bg, "k", fixture.NewBytes(100), time.Hour); err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, 100)
			b.SetBytes(100)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = c.AppendValue(p.ctx, dst[:0], "k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestInvalidationAndReliabilityMetrics: tracking state, its losses and the
// reliability counters are exported; a killed tracking connection shows as
// a loss and tracking back at 1.
func TestInvalidationAndReliabilityMetrics(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	mp, reader := meterProvider(t)
	c := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Invalidation: &Invalidation{},
		Reliability: &Reliability{}, MeterProvider: mp})
	waitWithin(t, 2*time.Second, func() bool { return c.InvalidationStats().Tracking })
	got := collect(t, reader)
	for k, v := range map[string]float64{"cachekit.invalidation.tracking{}": 1, "cachekit.invalidation.losses{}": 0,
		"cachekit.invalidation.publish_failures{}": 0, "cachekit.breaker.refused{}": 0, "cachekit.l2.shed{}": 0,
		"cachekit.l2.degraded{}": 0} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if err := raw.ClientKillByFilter(bg, "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 2*time.Second, func() bool { return c.InvalidationStats().Losses > 0 && c.InvalidationStats().Tracking })
	if got := collect(t, reader); got["cachekit.invalidation.losses{}"] != 1 || got["cachekit.invalidation.tracking{}"] != 1 {
		t.Errorf("after a loss: losses %v, tracking %v; want 1, 1", got["cachekit.invalidation.losses{}"], got["cachekit.invalidation.tracking{}"])
	}
}

// TestFailOpenLoadsCountAsDegraded: with Redis down under FailOpen, a
// GetOrLoad and an MGetOrLoad return the loader's values, and both are
// counted as degraded, not as ordinary loads.
func TestFailOpenLoadsCountAsDegraded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Stop()
	mp, reader := meterProvider(t)
	c := newClient(t, Options{RedisURL: srv.URL(), Reliability: &Reliability{FailOpen: true}, MeterProvider: mp})
	if v, err := GetOrLoad(bg, c, "k", func(context.Context) (int, error) { return 1, nil }); err != nil || v != 1 {
		t.Fatalf("GetOrLoad with Redis down: %d, %v", v, err)
	}
	m, err := MGetOrLoad(bg, c, []string{"a", "b"}, func(_ context.Context, missing []string) (map[string]int, error) {
		return map[string]int{"a": 1, "b": 2}, nil
	})
	if err != nil || len(m) != 2 {
		t.Fatalf("MGetOrLoad with Redis down: %v, %v", m, err)
	}
	degraded := map[string]bool{}
	for k := range collect(t, reader) {
		for _, op := range []string{"get_or_load", "mget_or_load"} {
			if strings.HasPrefix(k, "cachekit.operations{") && strings.Contains(k, "op="+op+",") && strings.Contains(k, "outcome=degraded") {
				degraded[op] = true
			}
		}
	}
	if !degraded["get_or_load"] || !degraded["mget_or_load"] {
		t.Fatalf("degraded outcomes recorded: %v, want both get_or_load and mget_or_load", degraded)
	}
}

// opCounts returns the cachekit.operations values of the reader by their
// attributes' encoding ("op=get,outcome=hit,tier=l1") and their total.
func opCounts(t *testing.T, r *sdkmetric.ManualReader) (map[string]uint64, uint64) {
	t.Helper()
	out, total := map[string]uint64{}, uint64(0)
	for k, v := range collect(t, r) {
		if attrs, ok := strings.CutPrefix(k, "cachekit.operations{"); ok {
			out[strings.TrimSuffix(attrs, "}")] = uint64(v)
			total += uint64(v)
		}
	}
	return out, total
}

// TestOperationsEqualStats: over 10^6 calls from four goroutines (Gets
// that hit L1, go to Redis after FlushLocal or miss, Sets, Deletes), with
// collections while they run (never going back), cachekit.operations is
// exact: its get series equal Stats' L1 and L2 counts, and it counts
// every operation once.
func TestOperationsEqualStats(t *testing.T) {
	t.Parallel()
	total := 1_000_000
	if testing.Short() {
		total = 100_000
	}
	_, rdb := withRedis(t)
	mp, reader := meterProvider(t)
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, MeterProvider: mp})
	const workers, keys = 4, 64
	for k := range keys {
		mustSet(t, c, "k"+strconv.Itoa(k), k)
	}
	var calls [3]atomic.Uint64 // get, set, delete
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var last uint64
			for i := range total / workers {
				key := "k" + strconv.Itoa((i*7+w)%keys)
				var err error
				switch r := i % 10_000; {
				case r == 0 && w == 0:
					c.FlushLocal() // the next reads go to Redis (L2 hits)
					fallthrough
				case r < 9_970:
					if r%1_000 == 500 {
						key = "absent" // a miss in both tiers
					}
					var v int
					if err = c.Get(bg, key, &v); err == ErrNotFound {
						err = nil
					}
					calls[0].Add(1)
				case r < 9_990:
					err = c.Set(bg, key, i)
					calls[1].Add(1)
				default: // a Delete, and the key back (else its reads all go to Redis)
					if err = c.Delete(bg, key); err == nil {
						err = c.Set(bg, key, i)
					}
					calls[2].Add(1)
					calls[1].Add(1)
				}
				if err != nil {
					t.Error(err)
					return
				}
				if w == 0 && i%50_000 == 0 { // a collection while the others run
					if _, sum := opCounts(t, reader); sum < last {
						t.Errorf("cachekit.operations went back: %d after %d", sum, last)
					} else {
						last = sum
					}
				}
			}
		})
	}
	wg.Wait()
	got, sum := opCounts(t, reader)
	st := c.Stats()
	gets := got["op=get,outcome=hit,tier=l1"] + got["op=get,outcome=hit,tier=l2"] + got["op=get,outcome=miss,tier=l2"]
	for _, c := range []struct {
		what      string
		got, want uint64
	}{
		{"get hits at l1 = Stats.L1Hits", got["op=get,outcome=hit,tier=l1"], st.L1Hits},
		{"get hits at l2 = Stats.L2Hits", got["op=get,outcome=hit,tier=l2"], st.L2Hits},
		{"get misses = Stats.L2Misses", got["op=get,outcome=miss,tier=l2"], st.L2Misses},
		{"gets at l2 = Stats.L1Misses", got["op=get,outcome=hit,tier=l2"] + got["op=get,outcome=miss,tier=l2"], st.L1Misses},
		{"gets = calls", gets, calls[0].Load()},
		{"sets = calls (and the 64 first)", got["op=set,outcome=ok,tier=l2"], calls[1].Load() + keys},
		{"deletes = calls", got["op=delete,outcome=ok,tier=l2"], calls[2].Load()},
		{"every operation", sum, calls[0].Load() + calls[1].Load() + calls[2].Load() + keys},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	if st.L1Hits == 0 || st.L2Hits == 0 || st.L2Misses == 0 {
		t.Errorf("the mix missed a path: %+v", st)
	}
	if t.Failed() {
		t.Logf("operations: %v", got)
	}
}

// TestTwoClientsOnOneMeterProviderAddUp: two Clients on one MeterProvider
// report the sum of their operations under each attribute set, and one's
// Close leaves its counts in the sum (a counter never goes back).
func TestTwoClientsOnOneMeterProviderAddUp(t *testing.T) {
	t.Parallel()
	mp, reader := meterProvider(t)
	a := newClient(t, Options{L1MaxBytes: 1 << 20, MeterProvider: mp})
	b := newClient(t, Options{L1MaxBytes: 1 << 20, MeterProvider: mp})
	hits := func(c *Client, n int) {
		t.Helper()
		mustSet(t, c, "k", 1)
		for range n {
			var v int
			if err := c.Get(bg, "k", &v); err != nil {
				t.Fatal(err)
			}
		}
	}
	const hit, set = "op=get,outcome=hit,tier=l1", "op=set,outcome=ok,tier=l1"
	hits(a, 3)
	hits(b, 4)
	if got, _ := opCounts(t, reader); got[hit] != 7 || got[set] != 2 {
		t.Fatalf("two Clients: hits %d, sets %d; want 7, 2 (all %v)", got[hit], got[set], got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	hits(b, 1)
	if got, _ := opCounts(t, reader); got[hit] != 8 || got[set] != 3 {
		t.Fatalf("after one Client's Close: hits %d, sets %d; want 8, 3 (all %v)", got[hit], got[set], got)
	}
}

// With an SDK TracerProvider (its default sampler) and a ctx carrying an
// unsampled parent, an encrypted L1 hit starts no span and allocates
// nothing.
func TestAllocsEncryptedAppendValueL1HitUnsampledParent(t *testing.T) {
	// Not parallel: counts allocations.
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	ctx := trace.ContextWithRemoteSpanContext(bg, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}, Remote: true}))
	assertL1HitAllocatesNothingCtx(t, ctx, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""), TracerProvider: tp})
}

// tracedClient is a Client with spans recorded in memory.
func tracedClient(t *testing.T, o Options) (*Client, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	o.TracerProvider = tp
	return newClient(t, o), rec
}

// spanAttr returns the value of attribute k on s, "" when absent.
func spanAttr(s sdktrace.ReadOnlySpan, k string) string {
	for _, a := range s.Attributes() {
		if string(a.Key) == k {
			return a.Value.String()
		}
	}
	return ""
}

// takeSpans returns the spans ended since the last call, by name.
func takeSpans(rec *tracetest.SpanRecorder, seen *int) []sdktrace.ReadOnlySpan {
	all := rec.Ended()
	out := all[*seen:]
	*seen = len(all)
	return out
}

// TestSpansNameTheTier: a Get that hits L1, one that goes to Redis and a
// miss each yield exactly one span, cachekit.Get, with the tier that
// answered, hit or miss, the value's size and the key's digest.
func TestSpansNameTheTier(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	c, rec := tracedClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSet(t, c, "k", "value")
	seen := 0
	takeSpans(rec, &seen)
	for _, tc := range []struct {
		name, key, tier, hit string
		prep                 func()
	}{
		{"l1 hit", "k", "l1", "true", nil},
		{"l2 hit", "k", "l2", "true", func() { c.FlushLocal() }},
		{"miss", "absent", "miss", "false", nil},
	} {
		if tc.prep != nil {
			tc.prep()
		}
		_, _ = Get[string](bg, c, tc.key)
		spans := takeSpans(rec, &seen)
		if len(spans) != 1 || spans[0].Name() != "cachekit.Get" {
			t.Fatalf("%s: %d spans %v, want one cachekit.Get", tc.name, len(spans), spans)
		}
		s := spans[0]
		if got := spanAttr(s, "cachekit.tier"); got != tc.tier {
			t.Errorf("%s: tier %q, want %q", tc.name, got, tc.tier)
		}
		if got := spanAttr(s, "cachekit.hit"); got != tc.hit {
			t.Errorf("%s: hit %q, want %s", tc.name, got, tc.hit)
		}
		if got := spanAttr(s, "cachekit.key_digest"); got != c.KeyDigest(tc.key) {
			t.Errorf("%s: key digest %q, want KeyDigest's %q", tc.name, got, c.KeyDigest(tc.key))
		}
		if tc.hit == "true" && spanAttr(s, "cachekit.value.size") == "" {
			t.Errorf("%s: no value size", tc.name)
		}
		if s.SpanKind() != trace.SpanKindInternal || s.InstrumentationScope().Version == "" {
			t.Errorf("%s: kind %v, scope %+v", tc.name, s.SpanKind(), s.InstrumentationScope())
		}
	}
}

// TestSpansNeverHoldKeysOrValues: across every operation, including a
// loader error that names the key, no span name, attribute, event or
// status carries the key or the value.
func TestSpansNeverHoldKeysOrValues(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	c, rec := tracedClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""), FleetSingleFlight: true})
	const key, value = "user:MARKER-KEY-7f3a", "MARKER-VALUE-c41d"
	_ = c.Set(bg, key, value)
	_, _ = Get[string](bg, c, key)
	c.FlushLocal()
	_, _, _ = GetWithTTL[string](bg, c, key)
	_, _ = c.Exists(bg, key)
	_, _ = c.TTL(bg, key)
	_ = c.Touch(bg, key, time.Minute)
	_, _ = c.SetIfAbsent(bg, key, value, time.Minute)
	_, _ = c.SetIfPresent(bg, key, value, time.Minute)
	_ = MSet(bg, c, map[string]string{key: value})
	_, _ = MGet[string](bg, c, []string{key, key + "2"})
	_, _ = GetOrLoad(bg, c, key+"-load", func(context.Context) (string, error) { return "", fmt.Errorf("no row for %s", key) })
	_, _ = GetOrLoad(bg, c, key+"-ok", func(context.Context) (string, error) { return value, nil })
	_, _ = MGetOrLoad(bg, c, []string{key + "-m"}, func(context.Context, []string) (map[string]string, error) {
		return map[string]string{key + "-m": value}, nil
	})
	_ = rdb.Set(bg, key+"-bad", "tampered "+value, time.Minute).Err()
	_, _ = Get[string](bg, c, key+"-bad")
	_ = c.Delete(bg, key)
	spans := rec.Ended()
	if len(spans) < 14 {
		t.Fatalf("%d spans, want one per operation", len(spans))
	}
	for _, s := range spans {
		parts := []string{s.Name(), s.Status().Description}
		for _, a := range s.Attributes() {
			parts = append(parts, string(a.Key), a.Value.String())
		}
		for _, e := range s.Events() {
			parts = append(parts, e.Name)
			for _, a := range e.Attributes {
				parts = append(parts, string(a.Key), a.Value.String())
			}
		}
		all := strings.Join(parts, " ")
		if strings.Contains(all, "MARKER") {
			t.Errorf("span %s holds a key or a value: %s", s.Name(), all)
		}
	}
}

// TestLoaderSpanNests: GetOrLoad is one span with the loader's run as its
// child (cachekit.load) and no spans of the Get and Set it makes inside;
// a loader error is the span's error with error.type loader.
func TestLoaderSpanNests(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	c, rec := tracedClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	if _, err := GetOrLoad(bg, c, "k", func(context.Context) (int, error) { return 7, nil }); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 2 || spans[0].Name() != "cachekit.load" || spans[1].Name() != "cachekit.GetOrLoad" {
		names := []string{}
		for _, s := range spans {
			names = append(names, s.Name())
		}
		t.Fatalf("spans %v, want [cachekit.load cachekit.GetOrLoad]", names)
	}
	load, op := spans[0], spans[1]
	if load.Parent().SpanID() != op.SpanContext().SpanID() {
		t.Fatal("the loader's span is not a child of GetOrLoad's")
	}
	if spanAttr(op, "cachekit.tier") != "miss" || spanAttr(op, "cachekit.outcome") != "loaded" || spanAttr(op, "cachekit.hit") != "false" {
		t.Fatalf("GetOrLoad that loaded: tier %q outcome %q hit %q", spanAttr(op, "cachekit.tier"),
			spanAttr(op, "cachekit.outcome"), spanAttr(op, "cachekit.hit"))
	}
	boom := errors.New("down")
	if _, err := GetOrLoad(bg, c, "f", func(context.Context) (int, error) { return 0, boom }); err != boom {
		t.Fatalf("GetOrLoad = %v, want the loader's error itself", err)
	}
	spans = rec.Ended()[2:]
	if len(spans) != 2 || spans[1].Status().Description != "loader" || spanAttr(spans[1], "error.type") != "loader" {
		t.Fatalf("failed load: %d spans, status %+v", len(spans), spans[len(spans)-1].Status())
	}
}

// redisSpans records the span each go-redis command ran under.
type redisSpans struct {
	mu   sync.Mutex
	seen []trace.SpanContext
}

func (h *redisSpans) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *redisSpans) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.seen = append(h.seen, trace.SpanContextFromContext(ctx))
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (h *redisSpans) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		h.seen = append(h.seen, trace.SpanContextFromContext(ctx))
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestRedisRoundTripNestsUnderTheSpan: the ctx a go-redis hook (such as
// redisotel's) sees carries the operation's span, so its spans nest: with
// auto-pipelining on (the default) too, for a caller alone on the Client,
// which sends directly (the promise is withdrawn for pipelined batches).
func TestRedisRoundTripNestsUnderTheSpan(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	h := &redisSpans{}
	rdb.AddHook(h)
	c, rec := tracedClient(t, Options{Redis: rdb, Encryption: encConfig("")})
	_ = c.Set(bg, "k", 1)
	_, _ = Get[int](bg, c, "k")
	spans := rec.Ended()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(spans) != 2 || len(h.seen) < 2 {
		t.Fatalf("%d spans, %d redis calls", len(spans), len(h.seen))
	}
	for _, sc := range h.seen {
		if sc.SpanID() != spans[0].SpanContext().SpanID() && sc.SpanID() != spans[1].SpanContext().SpanID() {
			t.Fatalf("a Redis call ran under span %v, not under the operation's", sc.SpanID())
		}
	}
}

// TestSpanEvents: an entry that fails to open, a breaker refusal, an SWR
// refresh and a lock wait are events on the operation's span.
func TestSpanEvents(t *testing.T) {
	t.Parallel()
	hasEvent := func(s sdktrace.ReadOnlySpan, name string) bool {
		for _, e := range s.Events() {
			if e.Name == name {
				return true
			}
		}
		return false
	}
	last := func(rec *tracetest.SpanRecorder, name string) sdktrace.ReadOnlySpan {
		spans := rec.Ended()
		for i := len(spans) - 1; i >= 0; i-- {
			if spans[i].Name() == name {
				return spans[i]
			}
		}
		t.Fatalf("no %s span", name)
		return nil
	}
	t.Run("open failed", func(t *testing.T) {
		_, rdb := withRedis(t)
		c, rec := tracedClient(t, Options{Redis: rdb, Encryption: encConfig("")})
		_ = rdb.Set(bg, "bad", strings.Repeat("x", 40), time.Minute).Err()
		_, _ = Get[string](bg, c, "bad")
		if s := last(rec, "cachekit.Get"); !hasEvent(s, "cachekit.open_failed") || spanAttr(s, "error.type") != "auth_failed" {
			t.Fatalf("events %v, error.type %q", s.Events(), spanAttr(s, "error.type"))
		}
	})
	t.Run("breaker refused", func(t *testing.T) {
		srv := redistest.Start(t)
		srv.Stop() // nothing listens on its port (no other test is handed it): every dial is refused
		c, rec := tracedClient(t, Options{RedisURL: srv.URL(), Reliability: &Reliability{BreakerThreshold: 1, MaxAttempts: 1}})
		_, _ = Get[string](bg, c, "k") // opens the breaker
		_, _ = Get[string](bg, c, "k") // refused
		if s := last(rec, "cachekit.Get"); !hasEvent(s, "cachekit.breaker_refused") || spanAttr(s, "error.type") != "circuit_open" {
			t.Fatalf("events %v, error.type %q", s.Events(), spanAttr(s, "error.type"))
		}
	})
	t.Run("swr refresh", func(t *testing.T) {
		_, rdb := withRedis(t)
		var now atomic.Int64
		now.Store(time.Now().UnixNano())
		c, rec := tracedClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, SWR: &SWR{Ratio: 0.5},
			Clock: func() time.Time { return time.Unix(0, now.Load()) }})
		load := func(context.Context) (int, error) { return 1, nil }
		_, _ = GetOrLoadTTL(bg, c, "k", time.Hour, load)
		now.Add(int64(50 * time.Minute)) // due: at most 30 min (±10 %) left
		_, _ = GetOrLoadTTL(bg, c, "k", time.Hour, load)
		if s := last(rec, "cachekit.GetOrLoad"); !hasEvent(s, "cachekit.swr_refresh") {
			t.Fatalf("events %v", s.Events())
		}
	})
	t.Run("lock wait", func(t *testing.T) {
		_, rdb := withRedis(t)
		c, rec := tracedClient(t, Options{Redis: rdb})
		started, release := make(chan struct{}), make(chan struct{})
		go func() {
			_, _ = GetOrLoad(bg, c, "k", func(context.Context) (int, error) {
				close(started)
				<-release
				return 1, nil
			})
		}()
		<-started
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = GetOrLoad(bg, c, "k", func(context.Context) (int, error) { return 2, nil })
		}()
		// The second caller joins the first one's load; let the load end
		// once it has joined (it is counted as a waiter).
		waitWithin(t, 5*time.Second, func() bool { return c.flights.Waiting("k") == 2 })
		close(release)
		<-done
		waited := 0
		for _, s := range rec.Ended() {
			if s.Name() == "cachekit.GetOrLoad" && hasEvent(s, "cachekit.lock_wait") {
				waited++
			}
		}
		if waited != 1 {
			t.Fatalf("%d GetOrLoad spans with a lock_wait event, want 1", waited)
		}
	})
}

// TestNoTracerNoSpans: without a TracerProvider the Client has no observer
// (metrics off too) and records nothing; the ctx it hands on is the
// caller's.
func TestNoTracerNoSpans(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20})
	if c.obs != nil {
		t.Fatal("an observer without a provider")
	}
	ctx := context.WithValue(bg, attribute.Key("x"), 1)
	if got, oc := c.obs.Begin(ctx, observe.OpGet, "k", 1); got != ctx || oc != nil {
		t.Fatal("begin without providers changed the ctx or observes")
	}
}

// TestUnsampledParentStartsNoSpan: under a caller's span that is not
// sampled, Get, Set and GetOrLoad (with its loader) start no span, even on
// a provider whose sampler would sample them; with
// SpansUnderUnsampledParents they do, and a root call always does.
func TestUnsampledParentStartsNoSpan(t *testing.T) {
	t.Parallel()
	unsampled := trace.ContextWithRemoteSpanContext(bg, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{7}, SpanID: trace.SpanID{7}, Remote: true}))
	run := func(all bool, ctx context.Context) []string {
		rec := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.AlwaysSample()))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		c := newClient(t, Options{L1MaxBytes: 1 << 20, TracerProvider: tp, SpansUnderUnsampledParents: all})
		if err := c.Set(ctx, "k", 1); err != nil {
			t.Fatal(err)
		}
		var v int
		if err := c.Get(ctx, "k", &v); err != nil {
			t.Fatal(err)
		}
		if _, err := GetOrLoad(ctx, c, "new", func(context.Context) (int, error) { return 2, nil }); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.Name())
		}
		return names
	}
	if got := run(false, unsampled); len(got) != 0 {
		t.Errorf("under an unsampled parent: spans %v, want none", got)
	}
	for _, c := range []struct {
		what string
		all  bool
		ctx  context.Context
	}{{"SpansUnderUnsampledParents", true, unsampled}, {"a root call", false, bg}} {
		if got := run(c.all, c.ctx); len(got) != 4 {
			t.Errorf("%s: spans %v, want Set, Get, GetOrLoad and its load", c.what, got)
		}
	}
}
