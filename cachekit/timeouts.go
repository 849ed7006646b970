package cachekit

// Whose time ran out: the bound every Redis call gets, with or without the
// reliability stack, and the error that says which deadline ended it.

import (
	"context"
	"errors"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// ErrTimeout is the cause inside a *BackendError when a Redis call ran out
// of the time the Client gives it (AttemptTimeout, OperationTimeout and a
// write's transfer allowance; with Options.Reliability nil, the default
// AttemptTimeout of 200 ms and the allowance) before the caller's own
// deadline. It satisfies net.Error with Timeout() true. It never matches
// context.DeadlineExceeded: that, and context.Canceled, are what a call
// returns when the caller's ctx ended it.
var ErrTimeout error = timeoutError{}

// timeoutError is ErrTimeout's type: a net.Error that is a timeout.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "cachekit: redis did not answer within the client's timeout"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// bareTimeout, when positive, replaces the default AttemptTimeout as the
// bound of a call without the reliability stack. Only tests set it: the
// package's TestMain widens it so that a slow reply on a loaded test
// machine is not read as a timeout by tests of other behaviour, and the
// tests of the bound itself restore the default.
var bareTimeout atomic.Int64

// bare runs fn, an L2 call named op that sends n bytes, without the
// reliability stack: one attempt bounded by the default AttemptTimeout
// plus transferTime(n), and by the caller's deadline.
func bare(ctx context.Context, op string, n int, fn func(context.Context) error) error {
	limit := defaultAttemptTimeout
	if d := time.Duration(bareTimeout.Load()); d > 0 {
		limit = d
	}
	deadline := time.Now().Add(limit + transferTime(n))
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	return settle(ctx, op, fn(actx))
}

// settle names the deadline that ended a failed Redis call: when the
// caller's ctx was cancelled or its deadline passed, the error matches
// context.Canceled or context.DeadlineExceeded (go-redis reports a socket
// deadline, which mirrors the caller's, as an i/o timeout); when the
// Client's own bound ended it, ErrTimeout. Other errors (a Redis reply, a
// refused connection, a miss) are returned as they are.
func settle(ctx context.Context, op string, err error) error {
	if err == nil || !isTimeout(err) {
		return err
	}
	if pe, ok := err.(*l2.PartialError); ok { // keep which keys were read
		return &l2.PartialError{Index: pe.Index, Err: settle(ctx, op, pe.Err)}
	}
	var be *BackendError
	if errors.As(err, &be) {
		op = be.Op
	}
	cause := ErrTimeout
	switch ctxErr := ctx.Err(); {
	case ctxErr != nil:
		cause = ctxErr
	case callerExpired(ctx):
		cause = context.DeadlineExceeded
	}
	return &BackendError{Op: op, Err: cause}
}

// callerExpired reports whether ctx's deadline has passed (ctx.Err may lag
// it by a timer tick).
func callerExpired(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// isTimeout reports whether err is a deadline or cancellation running out
// rather than an answer: a context error, or a network timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
