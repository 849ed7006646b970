package cachekit

// One place records what a public operation did: its span
// (Options.TracerProvider) and its metrics (Options.MeterProvider). Each
// public operation calls begin when it starts and end when it returns;
// with neither provider set, begin is one nil check and end one branch.

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// tracerName is the instrumentation scope of the Client's spans (and
// meterName's value: one scope for both).
const tracerName = meterName

// opID names a public operation.
type opID uint8

const (
	opGet opID = iota
	opGetWithTTL
	opAppendValue
	opGetBytes
	opInteropGet
	opSet
	opSetWithTTL
	opInteropSet
	opSetIfAbsent
	opSetIfPresent
	opMGet
	opMSet
	opDelete
	opExists
	opTTL
	opTouch
	opGetOrLoad
	opMGetOrLoad
	numOps
)

// metricOp is an operation's "op" attribute; variants of one operation
// (Get, GetWithTTL, GetBytes...) share it.
type metricOp uint8

const (
	mopGet metricOp = iota
	mopSet
	mopSetIfAbsent
	mopSetIfPresent
	mopMGet
	mopMSet
	mopDelete
	mopExists
	mopTTL
	mopTouch
	mopGetOrLoad
	mopMGetOrLoad
	numMetricOps
)

var metricOpNames = [numMetricOps]string{"get", "set", "set_if_absent", "set_if_present", "mget", "mset",
	"delete", "exists", "ttl", "touch", "get_or_load", "mget_or_load"}

// ops gives each operation its span name and its "op" attribute.
var ops = [numOps]struct {
	span string
	op   metricOp
}{
	opGet: {"cachekit.Get", mopGet}, opGetWithTTL: {"cachekit.GetWithTTL", mopGet},
	opAppendValue: {"cachekit.AppendValue", mopGet}, opGetBytes: {"cachekit.GetBytes", mopGet},
	opInteropGet: {"cachekit.InteropGet", mopGet},
	opSet:        {"cachekit.Set", mopSet}, opSetWithTTL: {"cachekit.SetWithTTL", mopSet},
	opInteropSet:  {"cachekit.InteropSet", mopSet},
	opSetIfAbsent: {"cachekit.SetIfAbsent", mopSetIfAbsent}, opSetIfPresent: {"cachekit.SetIfPresent", mopSetIfPresent},
	opMGet: {"cachekit.MGet", mopMGet}, opMSet: {"cachekit.MSet", mopMSet}, opDelete: {"cachekit.Delete", mopDelete},
	opExists: {"cachekit.Exists", mopExists}, opTTL: {"cachekit.TTL", mopTTL}, opTouch: {"cachekit.Touch", mopTouch},
	opGetOrLoad: {"cachekit.GetOrLoad", mopGetOrLoad}, opMGetOrLoad: {"cachekit.MGetOrLoad", mopMGetOrLoad},
}

// opOutcome is how an operation ended.
type opOutcome uint8

const (
	outOK        opOutcome = iota // a write or command succeeded
	outHit                        // a read found the entry
	outMiss                       // a read found nothing (ErrNotFound)
	outNotStored                  // a conditional write's condition did not hold
	outDegraded                   // Redis failed and FailOpen absorbed it
	outLoaded                     // a read missed and the loader's value was returned
	outError                      // the caller got an error
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"ok", "hit", "miss", "not_stored", "degraded", "loaded", "error"}

// tierIdx is the tier attribute: which tier answered a read or took a
// write ("none" when no tier did: a miss, or an error before any I/O).
type tierIdx uint8

const (
	tierNone tierIdx = iota
	tierL1
	tierL2
	numTiers
)

var tierNames = [numTiers]string{"none", "l1", "l2"}

func tierOf(t Tier) tierIdx {
	switch t {
	case TierL1:
		return tierL1
	case TierL2:
		return tierL2
	}
	return tierNone
}

// errClass is the "error.type" attribute of a failed operation: what a
// caller would branch on, never the error's text (which may come from a
// loader and name a key).
type errClass uint8

const (
	classNone errClass = iota
	classCanceled
	classDeadline
	classClosed
	classCircuitOpen
	classOverloaded
	classRedis
	classAuth
	classFormat
	classWrongType
	classInvalid
	classProvider
	classLoader
	classOther
	numClasses
)

var classNames = [numClasses]string{"", "canceled", "deadline_exceeded", "closed", "circuit_open", "overloaded",
	"redis", "auth_failed", "format", "wrong_type", "invalid_argument", "key_provider", "loader", "other"}

// classify names err's class. A loader's error is classLoader only when
// the operation says so (end's loaderFailed), since the loader's error
// reaches the caller as it is.
func classify(err error) errClass {
	var be *BackendError
	var fe *FormatError
	var pe *ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return classCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return classDeadline
	case errors.Is(err, ErrClosed):
		return classClosed
	case errors.Is(err, ErrCircuitOpen):
		return classCircuitOpen
	case errors.Is(err, ErrOverloaded):
		return classOverloaded
	case errors.Is(err, ErrWrongType):
		return classWrongType
	case errors.As(err, &be):
		return classRedis
	case errors.Is(err, encryption.ErrAuthFailed):
		return classAuth
	case errors.Is(err, ErrInvalidDestination), errors.Is(err, ErrInvalidTTL), errors.Is(err, ErrValueTooLarge),
		errors.Is(err, ErrNotBytes), errors.Is(err, errEmptyKey):
		return classInvalid
	case errors.As(err, &fe):
		return classFormat
	case errors.As(err, &pe):
		return classProvider
	}
	return classOther
}

// result is what an operation reports to end besides its error.
type result struct {
	size int       // value bytes read or written (msgpack payload)
	tier tierIdx   // the tier that answered a read or took a write
	out  opOutcome // outNotStored, outDegraded or outLoaded when err is nil; else derived
	// loaderFailed: err is the loader's own error (error.type "loader").
	loaderFailed bool
}

// observer holds the providers' instruments; a Client without either
// provider has none.
type observer struct {
	c      *Client
	tracer trace.Tracer // nil: no spans
	m      *meters      // nil: no metrics
}

// opCall is one observed operation in flight. Unobserved operations carry
// a nil *opCall (one word, nothing to zero); observed ones take one from
// opCalls, so observing allocates nothing in steady state either.
type opCall struct {
	span  trace.Span    // nil without a tracer
	start time.Duration // since epoch, with metrics
	op    opID
}

var opCalls = sync.Pool{New: func() any { return new(opCall) }}

// epoch is the origin of opCall.start (a monotonic reading).
var epoch = time.Now()

// begin starts observing operation op on key. It returns the ctx the
// operation runs with: with a tracer, one carrying the operation's span, so
// Redis round trips (go-redis hooks such as redisotel's) and the loader's
// span nest under it. Without providers it is inlined to one nil check.
func (c *Client) begin(ctx context.Context, op opID, key string) (_ context.Context, oc *opCall) {
	if c.obs != nil {
		ctx, oc = c.obs.begin(ctx, op, key, 1)
	}
	return ctx, oc
}

// beginBatch is begin for an operation on n keys.
func (c *Client) beginBatch(ctx context.Context, op opID, n int) (_ context.Context, oc *opCall) {
	if c.obs != nil {
		ctx, oc = c.obs.begin(ctx, op, "", n)
	}
	return ctx, oc
}

func (o *observer) begin(ctx context.Context, op opID, key string, n int) (context.Context, *opCall) {
	oc := opCalls.Get().(*opCall)
	*oc = opCall{op: op}
	if o.tracer != nil {
		ctx, oc.span = o.tracer.Start(ctx, ops[op].span)
		// An unsampled span costs no digest and no attributes.
		if oc.span.IsRecording() {
			if key != "" {
				oc.span.SetAttributes(attribute.String("cachekit.key_digest", o.c.keyDigest(key)))
			} else {
				oc.span.SetAttributes(attribute.Int("cachekit.keys", n))
			}
		}
	}
	if o.m != nil {
		oc.start = time.Since(epoch)
	}
	return ctx, oc
}

// end records how the operation ended.
func (c *Client) end(ctx context.Context, oc *opCall, r result, err error) {
	if oc != nil {
		c.obs.end(ctx, oc, r, err)
	}
}

func (o *observer) end(ctx context.Context, oc *opCall, r result, err error) {
	defer func() {
		*oc = opCall{}
		opCalls.Put(oc)
	}()
	out, class := r.out, classNone
	switch {
	case err == nil && out == outOK && r.tier != tierNone && isRead(oc.op):
		out = outHit
	case err == nil:
	case isMissError(err):
		out = outDegraded
	case errors.Is(err, ErrNotFound):
		out = outMiss
	default:
		out, class = outError, classify(err)
		if r.loaderFailed {
			class = classLoader
		}
	}
	tier := r.tier
	if o.m != nil {
		o.m.recordOp(ctx, ops[oc.op].op, tier, out, class, time.Since(epoch)-oc.start)
	}
	if oc.span == nil {
		return
	}
	if !oc.span.IsRecording() {
		oc.span.End()
		return
	}
	shown := tierNames[tier]
	if out == outMiss || out == outLoaded || (out == outDegraded && isRead(oc.op)) {
		shown = "miss"
	}
	attrs := []attribute.KeyValue{attribute.String("cachekit.tier", shown), attribute.String("cachekit.outcome", outcomeNames[out])}
	if isRead(oc.op) {
		attrs = append(attrs, attribute.Bool("cachekit.hit", out == outHit))
	}
	if r.size > 0 {
		attrs = append(attrs, attribute.Int("cachekit.value.size", r.size))
	}
	if class != classNone {
		attrs = append(attrs, attribute.String("error.type", classNames[class]))
		oc.span.SetStatus(codes.Error, classNames[class])
	}
	oc.span.SetAttributes(attrs...)
	oc.span.End()
}

// isMissError reports whether err is a read FailOpen turned into a miss.
func isMissError(err error) bool {
	var me *MissError
	return errors.As(err, &me)
}

// isRead reports whether op reads values (its outcome is hit or miss).
func isRead(op opID) bool {
	switch ops[op].op {
	case mopGet, mopMGet, mopGetOrLoad, mopMGetOrLoad:
		return true
	}
	return false
}

// event adds a span event to the operation running with ctx, when spans
// are on. Attributes never carry a key or a value.
func (c *Client) event(ctx context.Context, name string, attrs ...attribute.KeyValue) {
	if c.obs != nil && c.obs.tracer != nil {
		trace.SpanFromContext(ctx).AddEvent(name, trace.WithAttributes(attrs...))
	}
}

// openFailed counts an entry of tier that failed to open, in Stats, the
// decrypt-failure metric and an event on the operation's span.
func (c *Client) openFailed(ctx context.Context, tier Tier, err error) {
	c.stats.openFailures(tier).Add(1)
	r := failReason(err)
	c.met.openFailed(ctx, tier, r)
	c.event(ctx, "cachekit.open_failed", attribute.String("cachekit.tier", string(tier)), attribute.String("reason", failReasons[r]))
}

// loaderError marks an error as the loader's own on its way to the
// operation that ran the loader, which unwraps it (see unwrapLoader) and
// reports error.type "loader".
type loaderError struct{ err error }

func (e *loaderError) Error() string { return e.err.Error() }
func (e *loaderError) Unwrap() error { return e.err }

// unwrapLoader returns err without its loaderError mark, and whether it
// had one. A nil err costs nothing (errors.As would allocate its target).
func unwrapLoader(err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	return unwrapLoaderErr(err)
}

func unwrapLoaderErr(err error) (error, bool) {
	var le *loaderError
	if errors.As(err, &le) {
		return le.err, true
	}
	return err, false
}

// startLoad starts the loader's child span and returns the function that
// ends it and records the loader's metrics.
func (c *Client) startLoad(ctx context.Context) (context.Context, func(error)) {
	if c.obs == nil {
		return ctx, func(error) {}
	}
	var span trace.Span
	if c.obs.tracer != nil {
		ctx, span = c.obs.tracer.Start(ctx, "cachekit.load")
	}
	start := time.Now()
	return ctx, func(err error) {
		lo := loadOK
		switch {
		case errors.Is(err, ErrNotFound):
			lo = loadNotFound
		case err != nil:
			lo = loadError
		}
		if c.obs.m != nil {
			c.obs.m.recordLoad(ctx, lo, time.Since(start))
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

// loadOutcome is the "outcome" of a loader run.
type loadOutcome uint8

const (
	loadOK loadOutcome = iota
	loadNotFound
	loadError
	numLoadOutcomes
)

var loadNames = [numLoadOutcomes]string{"ok", "not_found", "error"}
