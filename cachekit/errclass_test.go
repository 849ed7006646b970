package cachekit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/l2"
)

// TestErrorClasses: each mistake has one class a caller can branch on, and
// the caller's own mistakes are reported before any I/O (here: against a
// Redis that is down, so any I/O would surface as a *BackendError).
func TestErrorClasses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	srv.Stop()
	down := newClient(t, Options{RedisURL: srv.URL(), Encryption: encConfig("")})
	var be *BackendError
	var fe *FormatError

	var n int
	for name, dst := range map[string]any{"nil": nil, "non-pointer": n, "nil pointer": (*int)(nil)} {
		err := down.Get(bg, "k", dst)
		if !errors.Is(err, ErrInvalidDestination) || errors.As(err, &be) {
			t.Errorf("Get into a %s destination = %v, want ErrInvalidDestination before I/O", name, err)
		}
	}
	if _, err := Get[string](bg, down, ""); !errors.As(err, &fe) || errors.As(err, &be) {
		t.Errorf(`Get("") = %v, want a *FormatError before I/O`, err)
	}
	if _, err := MGet[string](bg, down, []string{"a", ""}); !errors.As(err, &fe) || errors.As(err, &be) {
		t.Errorf(`MGet with "" = %v, want a *FormatError before I/O`, err)
	}
	err := down.SetWithTTL(bg, "k", "v", 0)
	if !errors.Is(err, ErrInvalidTTL) || errors.As(err, &fe) || errors.As(err, &be) {
		t.Errorf("SetWithTTL(ttl 0) = %v, want ErrInvalidTTL only, before I/O", err)
	}

	closed := newClient(t, Options{L1MaxBytes: 1 << 10})
	_ = closed.Close()
	if err := closed.Get(bg, "k", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("Get(nil dst) after Close = %v, want ErrClosed", err)
	}

	// An encrypted entry too short to hold a nonce and a tag does not
	// authenticate, like any other damaged entry.
	c, rdb := redisClient(t, Options{Encryption: encConfig("")})
	if err := rdb.Set(bg, "short", "abcde", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.RPush(bg, "list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Get[string](bg, c, "list"); !errors.Is(err, ErrWrongType) || !errors.As(err, &be) {
		t.Errorf("Get of a list key = %v, want a *BackendError matching ErrWrongType", err)
	}
	// MGet reports the list key as Get does, per key, and still returns
	// the other values.
	mustSet(t, c, "ok", "fine")
	for _, l1 := range []bool{true, false} {
		mc := c // no L1: MGet reads with MGET
		if l1 {
			mc = newClient(t, Options{Redis: rdb, Encryption: encConfig(""), L1MaxBytes: 1 << 20})
		}
		got, err := MGet[string](bg, mc, []string{"ok", "list", "absent"})
		var ee *EntryError
		if !errors.Is(err, ErrWrongType) || !errors.As(err, &ee) || ee.KeyDigest != mc.KeyDigest("list") || got["ok"] != "fine" || len(got) != 1 {
			t.Errorf("MGet (L1 %v) with a list key = %v, %v; want ok's value and an *EntryError matching ErrWrongType for list", l1, got, err)
		}
	}
	_, err = Get[string](bg, c, "short")
	var ee *EntryError
	if !errors.Is(err, ErrAuthFailed) || !errors.As(err, &ee) {
		t.Errorf("Get of a 5-byte encrypted entry = %v, want an *EntryError matching ErrAuthFailed", err)
	}
}

// A write whose outcome is unknown is classed outcome_unknown in metrics
// and warnings (not "redis"), unless the caller's own deadline or cancel
// ended it: that keeps its class (R13).
func TestUnknownWriteClass(t *testing.T) {
	t.Parallel()
	if c := errClasses.Class(&BackendError{Op: "set", Err: ErrTimeout}); c == observe.OutcomeUnknown {
		t.Fatalf("a write with a known outcome classed %v", c)
	}
	unknown := l2.OutcomeUnknown("set", ErrTimeout)
	if c := errClasses.Class(unknown); c != observe.OutcomeUnknown || c.String() != "outcome_unknown" {
		t.Fatalf("a write of unknown outcome classed %v, want outcome_unknown", c)
	}
	if c := errClasses.Class(l2.OutcomeUnknown("set", context.DeadlineExceeded)); c != observe.Deadline {
		t.Fatalf("an unknown write the caller's deadline ended classed %v, want deadline_exceeded", c)
	}
}
