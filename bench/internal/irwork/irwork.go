// Package irwork defines the hot paths whose instruction counts the gate
// (cmd/benchir) tracks, allocation-free but for the struct L1 hit's
// decoded value. Each workload is set up once and
// returns an op that does one unit of work; the same ops back the
// allocation-budget tests, so a workload that starts allocating fails
// those before callgrind is ever run.
package irwork

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Op performs one unit of a workload.
type Op func() error

// ErrUnknown is returned by New for a name Names does not list.
var ErrUnknown = errors.New("irwork: unknown workload")

// The cache key and tenant every workload binds.
const (
	key    = "user:12345"
	tenant = "default"
)

var builders = map[string]func() (Op, error){
	"EncryptNow/100B":                 encryptNow,
	"DecryptNow/100B":                 decryptNow,
	"L1Hit/encrypted/bytes/100B":      l1Hit,
	"L1Hit/encrypted/struct/100B":     l1HitStruct,
	"L1Hit/named/bytes/100B":          l1HitNamed,
	"L1Hit/metrics/bytes/100B":        l1HitMetrics,
	"L1Hit/unsampled-span/bytes/100B": l1HitUnsampled,
	"AppendAAD":                       appendAAD,
	"EnvelopeOpen/1KiB":               envelopeOpen,
}

// allocs is each workload's allocation budget per op: zero, except for
// the struct L1 hit, the path most users take, whose Get[T] decodes into a
// fresh value that owns its strings and slice: 3 allocations, measured
// (the block the five strings share since issue 34, the Tags slice, and
// one more of Get[T]'s own; 7 when each string was its own allocation),
// pinned so one more fails.
var allocs = map[string]int{
	"L1Hit/encrypted/struct/100B": 3,
}

// Allocs returns the allocations per op the named workload is allowed
// (the allocation-budget tests hold each op to exactly this).
func Allocs(name string) int { return allocs[name] }

// Names lists the workloads, sorted.
func Names() []string {
	out := make([]string, 0, len(builders))
	for n := range builders {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Sink keeps the regression hook's copies reachable, so the compiler cannot
// drop them.
var Sink []byte

// New sets up the named workload and returns its op. With regress set the
// op also copies its output into a fresh slice: the deliberate regression
// (one extra allocation and copy per op) that shows the gate firing.
func New(name string, regress bool) (Op, error) {
	build, ok := builders[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	op, err := build()
	if err != nil || !regress {
		return op, err
	}
	return func() error {
		if err := op(); err != nil {
			return err
		}
		Sink = append(make([]byte, 0, len(last)), last...)
		return nil
	}, nil
}

// last is the output of the most recent op, for the regression hook.
var last []byte

func manager() (*encryption.Manager, []byte, error) {
	m, err := encryption.NewManager(encryption.Config{MasterKey: fixture.MasterKey})
	if err != nil {
		return nil, nil, err
	}
	if err := m.Warm(context.Background()); err != nil {
		return nil, nil, err
	}
	aad, err := protocol.AppendAAD(nil, tenant, key, protocol.FormatMsgpack, true)
	return m, aad, err
}

// errDeferred means a warmed Manager unexpectedly deferred an operation.
var errDeferred = errors.New("irwork: operation deferred after Warm")

func encryptNow() (Op, error) {
	m, aad, err := manager()
	if err != nil {
		return nil, err
	}
	pt := fixture.NewBytes(100)
	dst := make([]byte, 0, len(pt)+encryption.Overhead)
	return func() error {
		out, d, err := m.EncryptNow(dst[:0], pt, aad)
		if d != nil {
			return errDeferred
		}
		last = out
		return err
	}, nil
}

func decryptNow() (Op, error) {
	m, aad, err := manager()
	if err != nil {
		return nil, err
	}
	pt := fixture.NewBytes(100)
	sealed, d, err := m.EncryptNow(nil, pt, aad)
	if err != nil || d != nil {
		return nil, fmt.Errorf("irwork: seal fixture: %v", err)
	}
	dst := make([]byte, 0, len(pt))
	return func() error {
		out, d, err := m.DecryptNow(dst[:0], sealed, aad)
		if d != nil {
			return errDeferred
		}
		last = out
		return err
	}, nil
}

// l1Hit is AppendValue of a 100-byte []byte from an encrypted L1.
func l1Hit() (Op, error) { return l1HitWith(context.Background(), cachekit.Options{}, nil) }

// l1HitNamed is l1Hit with a name key (encryption.Config.NameKey): the
// key's opaque name comes from the Client's memo.
func l1HitNamed() (Op, error) {
	return l1HitWith(context.Background(), cachekit.Options{}, bytes.Repeat([]byte{0x17}, encryption.KeySize))
}

// l1HitMetrics is l1Hit with an OpenTelemetry SDK MeterProvider (a manual
// reader, never collected during the run): what metrics add to the hit.
func l1HitMetrics() (Op, error) {
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	return l1HitWith(context.Background(), cachekit.Options{MeterProvider: mp}, nil)
}

// l1HitUnsampled is l1Hit with an SDK TracerProvider (its default sampler,
// ParentBased) called with a ctx whose span context is valid and not
// sampled, as a service that samples a fraction of its requests passes
// for the rest.
func l1HitUnsampled() (Op, error) {
	tp := sdktrace.NewTracerProvider()
	parent := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8},
		Remote:  true,
	})
	return l1HitWith(trace.ContextWithRemoteSpanContext(context.Background(), parent), cachekit.Options{TracerProvider: tp}, nil)
}

// l1HitWith is l1Hit's workload called with ctx, on a Client with the
// providers of o and nameKey (nil: none).
func l1HitWith(ctx context.Context, o cachekit.Options, nameKey []byte) (Op, error) {
	o.L1MaxBytes, o.DefaultTTL = 1<<20, time.Hour
	o.Encryption = &encryption.Config{MasterKey: fixture.MasterKey, NameKey: nameKey}
	c, err := cachekit.New(o)
	if err != nil {
		return nil, err
	}
	if err := c.Warm(ctx); err != nil {
		return nil, err
	}
	if err := c.SetWithTTL(ctx, key, fixture.NewBytes(100), time.Hour); err != nil {
		return nil, err
	}
	dst := make([]byte, 0, 100)
	return func() error {
		out, err := c.AppendValue(ctx, dst[:0], key)
		last = out
		return err
	}, nil
}

// l1HitStruct is Get[T] of a 100-byte struct from an encrypted L1: the
// decrypt, the envelope and the msgpack decode into a fresh value.
func l1HitStruct() (Op, error) {
	c, err := cachekit.New(cachekit.Options{
		L1MaxBytes: 1 << 20,
		DefaultTTL: time.Hour,
		Encryption: &encryption.Config{MasterKey: fixture.MasterKey},
	})
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	if err := c.SetWithTTL(ctx, key, fixture.NewRecord(100), time.Hour); err != nil {
		return nil, err
	}
	return func() error {
		r, err := cachekit.Get[fixture.Record](ctx, c, key)
		if err == nil && r.ID != 123456789 {
			err = errors.New("irwork: struct hit decoded the wrong value")
		}
		last = nil
		return err
	}, nil
}

func appendAAD() (Op, error) {
	dst := make([]byte, 0, 64)
	return func() error {
		out, err := protocol.AppendAAD(dst[:0], tenant, key, protocol.FormatMsgpack, true)
		last = out
		return err
	}, nil
}

func envelopeOpen() (Op, error) {
	env, err := protocol.SealEnvelope(nil, fixture.NewBytes(1024), protocol.FormatMsgpack)
	if err != nil {
		return nil, err
	}
	dst := make([]byte, 0, 1024)
	return func() error {
		out, err := protocol.OpenEnvelope(dst[:0], env)
		last = out
		return err
	}, nil
}
