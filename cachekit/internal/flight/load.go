package flight

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// A loader is the caller's function a load runs (GetOrLoad's load,
// MGetOrLoad's loader, an SWR refresh's). Load runs it with a ctx through
// which it may choose the TTL of what it returns (OverrideTTL), and marks
// its error as the loader's own (LoaderError) on the way to the operation,
// which unmarks it (Unmark) and reports error.type "loader".

// LoaderError marks an error as the loader's own on its way to the
// operation that ran the loader.
type LoaderError struct{ Err error }

func (e *LoaderError) Error() string { return e.Err.Error() }
func (e *LoaderError) Unwrap() error { return e.Err }

// Unmark returns err without its LoaderError mark, and whether it had one.
// A nil err costs nothing (errors.As would allocate its target).
func Unmark(err error) (error, bool) {
	if err == nil {
		return nil, false
	}
	var le *LoaderError
	if errors.As(err, &le) {
		return le.Err, true
	}
	return err, false
}

// Panicked is the error a recovered loader panic becomes, marked as the
// loader's. The panic value may hold data: only its type is named.
func Panicked(r any) error {
	return &LoaderError{fmt.Errorf("cachekit: loader panicked (%T)", r)}
}

// ttlOverride is where OverrideTTL leaves a loader's TTL; the loader's ctx
// carries it.
type ttlOverride struct{ ttl atomic.Int64 }

type ttlOverrideKey struct{}

// OverrideTTL makes ttl the TTL of what the loader given ctx returns (the
// last call wins). It does nothing on a ctx that is not a loader's; the
// caller checks ttl first.
func OverrideTTL(ctx context.Context, ttl time.Duration) {
	if o, ok := ctx.Value(ttlOverrideKey{}).(*ttlOverride); ok {
		o.ttl.Store(int64(ttl))
	}
}

// Load runs load with a ctx that OverrideTTL can reach and returns its
// value with the TTL to store it for: ttl, or the loader's override. Its
// error is marked as the loader's (a *LoaderError). A panic of load is not
// recovered here.
func Load[T any](ctx context.Context, load func(context.Context) (T, error), ttl time.Duration) (T, time.Duration, error) {
	o := new(ttlOverride)
	v, err := load(context.WithValue(ctx, ttlOverrideKey{}, o))
	if d := time.Duration(o.ttl.Load()); d != 0 {
		ttl = d
	}
	if err != nil {
		err = &LoaderError{err}
	}
	return v, ttl, err
}
