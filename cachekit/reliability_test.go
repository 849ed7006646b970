package cachekit

import (
	"errors"
	"io"
	"testing"
	"time"
)

func TestMissErrorMatchesBoth(t *testing.T) {
	t.Parallel()
	var err error = &MissError{Err: &BackendError{Op: "get", Err: io.EOF}}
	var be *BackendError
	if !errors.Is(err, ErrNotFound) || !errors.As(err, &be) || !errors.Is(err, io.EOF) || !loadable(err) {
		t.Fatalf("MissError: %v", err)
	}
}

func TestReliabilityOptionsValidate(t *testing.T) {
	t.Parallel()
	for _, r := range []Reliability{{MaxAttempts: -1}, {MaxWait: -1}, {BreakerOpenFor: -time.Second}, {MaxInFlight: -2}} {
		if _, err := New(Options{L1MaxBytes: 1 << 20, Reliability: &r}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", r, err)
		}
	}
	for _, w := range []SWR{{Ratio: 1}, {Ratio: -0.1}, {Jitter: 0.6}, {MaxRefreshes: -1}} {
		if _, err := New(Options{L1MaxBytes: 1 << 20, SWR: &w}); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: %v", w, err)
		}
	}
	if p := Production(); p.Reliability == nil || !p.Reliability.FailOpen || p.SWR == nil || p.Invalidation == nil {
		t.Fatalf("production preset: %+v", p)
	}
	if m := Minimal(); m.Reliability != nil || m.SWR != nil || m.Invalidation != nil {
		t.Fatalf("minimal preset must keep the stack, SWR and invalidation off: %+v", m)
	}
	s, err := Secure("4242424242424242424242424242424242424242424242424242424242424242")
	if err != nil || s.Reliability == nil || s.Reliability.FailOpen {
		t.Fatalf("secure preset must fail closed: %v %+v", err, s.Reliability)
	}
}
