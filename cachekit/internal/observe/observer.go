package observe

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Config is what an Observer needs from its owner.
type Config struct {
	// Tracer and Meter are the providers; New returns nil when both are
	// nil.
	Tracer trace.TracerProvider
	Meter  metric.MeterProvider
	// Digest names a key on a span (the owner's keyed digest).
	Digest func(key string) string
	// Errors names the owner's own errors, so that the observer tells how
	// a failed operation ended (a miss, FailOpen's degraded read, or a
	// failure of some class).
	Errors *Errors
	// Snapshot is read at each metrics collection for the gauges.
	Snapshot func() Snapshot
	// SpansUnderUnsampledParents starts a span for every operation. When
	// false, an operation whose ctx carries a valid parent span that is
	// neither sampled nor recording starts none: the SDK's default sampler
	// (ParentBased) would not sample it, and Start would cost two
	// allocations for a span nobody sees.
	SpansUnderUnsampledParents bool
	// L2DurationSample is the sampling of cachekit.operation.duration for
	// operations Redis answered without an error (L2Sample when 0).
	L2DurationSample int
}

// Snapshot is what the observable instruments report at each collection.
// A Has field false leaves that group's instruments unreported.
type Snapshot struct {
	HasL1                   bool
	L1Bytes                 int64
	L1Evictions, L1Rejected uint64

	HasEncryption bool
	Encryptions   uint64
	DecryptsByKey [4]uint64

	HasGuard                  bool
	Breaker                   int
	Refused, Shed, Degraded   uint64
	HasInvalidation, Tracking bool
	InvalidationMode          int // 0 none, 1 tracking, 2 pubsub, 3 lifetime (l2.Mode)
	InvalidationLosses        uint64
	InvalidationRefusals      uint64
	PublishFailures           uint64
}

// Observer records the Client's operations. A nil *Observer records
// nothing.
type Observer struct {
	cfg    Config
	tracer trace.Tracer // nil: no spans
	m      *meters      // nil: no metrics
}

// New returns an Observer for cfg, or nil when cfg has no provider.
func New(cfg Config) (*Observer, error) {
	if cfg.Tracer == nil && cfg.Meter == nil {
		return nil, nil
	}
	o := &Observer{cfg: cfg}
	if cfg.Meter != nil {
		m, err := newMeters(cfg.Meter, cfg.Snapshot, cfg.L2DurationSample)
		if err != nil {
			return nil, err
		}
		o.m = m
	}
	if cfg.Tracer != nil {
		o.tracer = cfg.Tracer.Tracer(Scope, trace.WithInstrumentationVersion(ModuleVersion()))
	}
	return o, nil
}

// Tracing reports whether spans are on.
func (o *Observer) Tracing() bool { return o != nil && o.tracer != nil }

// Call is one observed operation in flight. Unobserved operations carry a
// nil *Call; observed ones take one from calls, so observing allocates
// nothing in steady state either.
type Call struct {
	span  trace.Span    // nil without a tracer
	start time.Duration // since epoch, with metrics
	op    Op
}

var calls = sync.Pool{New: func() any { return new(Call) }}

// epoch is the origin of Call.start (a monotonic reading).
var epoch = time.Now()

// Begin starts observing operation op on key ("" for an operation on n
// keys). It returns the ctx the operation runs with: with a tracer, one
// carrying the operation's span, so Redis round trips (go-redis hooks such
// as redisotel's) and the loader's span nest under it. A nil Observer
// returns ctx and a nil *Call.
func (o *Observer) Begin(ctx context.Context, op Op, key string, n int) (context.Context, *Call) {
	if o == nil { // inlined: the whole cost without providers
		return ctx, nil
	}
	return o.begin(ctx, op, key, n)
}

func (o *Observer) begin(ctx context.Context, op Op, key string, n int) (context.Context, *Call) {
	var span trace.Span
	if o.tracer != nil && o.startsSpan(ctx) {
		ctx, span = o.tracer.Start(ctx, ops[op].span)
		// An unsampled span costs no digest and no attributes.
		if span.IsRecording() {
			if key != "" {
				span.SetAttributes(attribute.String("cachekit.key_digest", o.cfg.Digest(key)))
			} else {
				span.SetAttributes(attribute.Int("cachekit.keys", n))
			}
		}
	}
	if o.m == nil && span == nil {
		return ctx, nil // a span skipped and no metrics: End has nothing to do
	}
	oc := calls.Get().(*Call)
	*oc = Call{op: op, span: span}
	if o.m != nil {
		oc.start = time.Since(epoch)
	}
	return ctx, oc
}

// startsSpan reports whether an operation called with ctx starts a span:
// unless Config.SpansUnderUnsampledParents, not when ctx carries a valid
// parent span that is neither sampled nor recording (the SDK's default
// sampler, ParentBased, samples a child as its parent; a sampler that may
// sample the child of an unsampled parent needs the option). Then ctx is
// handed on as it is: its span is the parent's, so a Redis span or an event
// lands where the parent's sampler decides, as a child of the operation
// would.
func (o *Observer) startsSpan(ctx context.Context) bool {
	if o.cfg.SpansUnderUnsampledParents {
		return true
	}
	parent := trace.SpanFromContext(ctx)
	sc := parent.SpanContext()
	return !sc.IsValid() || sc.IsSampled() || parent.IsRecording()
}

// End records how the operation oc ended. A nil oc records nothing.
func (o *Observer) End(ctx context.Context, oc *Call, r Result, err error) {
	if oc != nil { // inlined: the whole cost without providers
		o.end(ctx, oc, r, err)
	}
}

func (o *Observer) end(ctx context.Context, oc *Call, r Result, err error) {
	defer func() {
		*oc = Call{}
		calls.Put(oc)
	}()
	out, class := r.Out, NoClass
	switch {
	case err == nil && out == OK && r.Tier != None && ops[oc.op].read:
		out = Hit
	case err == nil:
	default:
		out, class = o.cfg.Errors.Outcome(err)
		if out == Failed && r.LoaderFailed {
			class = Loader
		}
	}
	if o.m != nil {
		o.m.recordOp(ctx, oc.op, r.Tier, out, class, oc.start)
	}
	if oc.span == nil {
		return
	}
	if !oc.span.IsRecording() {
		oc.span.End()
		return
	}
	read := ops[oc.op].read
	shown := tierNames[r.Tier]
	if out == Miss || out == Loaded || (out == Degraded && read) {
		shown = "miss"
	}
	attrs := []attribute.KeyValue{attribute.String("cachekit.tier", shown), attribute.String("cachekit.outcome", outcomeNames[out])}
	if read {
		attrs = append(attrs, attribute.Bool("cachekit.hit", out == Hit))
	}
	if r.Size > 0 {
		attrs = append(attrs, attribute.Int("cachekit.value.size", r.Size))
	}
	if class != NoClass {
		attrs = append(attrs, attribute.String("error.type", classNames[class]))
		oc.span.SetStatus(codes.Error, classNames[class])
	}
	oc.span.SetAttributes(attrs...)
	oc.span.End()
}

// Event adds a span event to the operation running with ctx, when spans
// are on. Attributes must never carry a key or a value.
func (o *Observer) Event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if o != nil && o.tracer != nil {
		trace.SpanFromContext(ctx).AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// OpenFailed records an entry of tier that failed to open: the
// decrypt-failure metric and an event on the operation's span.
func (o *Observer) OpenFailed(ctx context.Context, tier Tier, err error) {
	if o == nil {
		return
	}
	r := failReason(err)
	o.m.openFailed(ctx, tier, r)
	o.Event(ctx, "cachekit.open_failed", attribute.String("cachekit.tier", tierNames[tier]), attribute.String("reason", failReasons[r]))
}

// failReason is the "reason" attribute of an entry that failed to open.
func failReason(err error) int {
	var fe *protocol.FormatError
	switch {
	case errors.Is(err, encryption.ErrAuthFailed):
		return failAuth
	case errors.As(err, &fe):
		return failFormat
	}
	return failOther
}

// StartLoad starts the loader's child span and returns the function that
// ends it and records the loader's metrics (outcome "not_found" for an
// error notFound reports true).
func (o *Observer) StartLoad(ctx context.Context, notFound func(error) bool) (context.Context, func(error)) {
	if o == nil {
		return ctx, func(error) {}
	}
	var span trace.Span
	if o.tracer != nil && o.startsSpan(ctx) {
		ctx, span = o.tracer.Start(ctx, "cachekit.load")
	}
	start := time.Now()
	return ctx, func(err error) {
		lo := loadOK
		switch {
		case err != nil && notFound(err):
			lo = loadNotFound
		case err != nil:
			lo = loadError
		}
		if o.m != nil {
			o.m.recordLoad(ctx, lo, time.Since(start))
		}
		if span != nil {
			span.SetAttributes(attribute.String("cachekit.outcome", loadNames[lo]))
			if lo == loadError {
				span.SetStatus(codes.Error, "loader")
			}
			span.End()
		}
	}
}

// Retry counts a retried Redis attempt.
func (o *Observer) Retry(ctx context.Context) {
	if o != nil {
		o.m.retry(ctx)
	}
}

// SWRRefresh counts a background refresh, ok or failed.
func (o *Observer) SWRRefresh(ctx context.Context, ok bool) {
	if o != nil {
		o.m.swrRefresh(ctx, ok)
	}
}

// BreakerTransition counts the breaker entering state to.
func (o *Observer) BreakerTransition(ctx context.Context, to int) {
	if o != nil {
		o.m.breakerTransition(ctx, to)
	}
}

// Invalidation counts an L1 entry dropped on another instance's
// invalidation.
func (o *Observer) Invalidation(ctx context.Context) {
	if o != nil {
		o.m.invalidation(ctx)
	}
}

// Close unregisters the gauges' callback.
func (o *Observer) Close() {
	if o != nil {
		o.m.close()
	}
}

// loadOutcome is the "outcome" of a loader run.
type loadOutcome uint8

const (
	loadOK loadOutcome = iota
	loadNotFound
	loadError
	numLoadOutcomes
)

var loadNames = [numLoadOutcomes]string{"ok", "not_found", "error"}
