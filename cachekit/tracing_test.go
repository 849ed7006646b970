package cachekit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

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
