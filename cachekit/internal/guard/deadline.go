package guard

// Whose time ran out: the bound every Redis call gets, with or without the
// reliability stack, and the error that says which deadline ended it.

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// ErrTimeout is the cause inside an *l2.BackendError when a Redis call ran
// out of the time the Client gives it (AttemptTimeout, OperationTimeout and
// a write's transfer allowance; without the stack, DefaultAttemptTimeout
// and the allowance) before the caller's own deadline. It satisfies
// net.Error with Timeout() true. It never matches context.DeadlineExceeded:
// that, and context.Canceled, are what a call returns when the caller's ctx
// ended it.
var ErrTimeout error = timeoutError{}

// timeoutError is ErrTimeout's type: a net.Error that is a timeout.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "cachekit: redis did not answer within the client's timeout"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// transferRate is the slowest transfer to Redis a write is budgeted for:
// an operation that sends n bytes gets TransferTime(n) on top of
// OperationTimeout and of each attempt's AttemptTimeout.
const transferRate = 16 << 20 // bytes per second

// TransferTime is n bytes at 16 MiB/s, the slowest transfer to Redis a
// write is budgeted for: 4 s for 64 MiB, microseconds for a small value.
func TransferTime(n int) time.Duration {
	return time.Duration(int64(n) * int64(time.Second) / transferRate)
}

// Bare runs fn, a Redis call named op that sends n bytes, without the
// stack: one attempt bounded by bound (DefaultAttemptTimeout when not
// positive) plus TransferTime(n), and by the caller's deadline. It is what
// a nil Guard's Do and DoSized run with the default bound.
func Bare(ctx context.Context, op string, n int, bound time.Duration, fn func(context.Context) error) error {
	if bound <= 0 {
		bound = DefaultAttemptTimeout
	}
	actx, cancel := context.WithDeadline(ctx, time.Now().Add(bound+TransferTime(n)))
	defer cancel()
	return Settle(ctx, op, fn(actx))
}

// Settle names the deadline that ended a failed Redis call: when the
// caller's ctx was cancelled or its deadline passed, the error matches
// context.Canceled or context.DeadlineExceeded (go-redis reports a socket
// deadline, which mirrors the caller's, as an i/o timeout); when the
// Client's own bound ended it, ErrTimeout. Other errors (a Redis reply, a
// refused connection, a miss) are returned as they are; an
// *l2.PartialError keeps which keys were read, and a write's error keeps
// matching l2.ErrOutcomeUnknown.
func Settle(ctx context.Context, op string, err error) error {
	if err == nil || !IsTimeout(err) {
		return err
	}
	if pe, ok := err.(*l2.PartialError); ok {
		return &l2.PartialError{Index: pe.Index, Err: Settle(ctx, op, pe.Err)}
	}
	var be *l2.BackendError
	if errors.As(err, &be) {
		op = be.Op
	}
	cause := ErrTimeout
	switch ctxErr := ctx.Err(); {
	case ctxErr != nil:
		cause = ctxErr
	case CallerExpired(ctx):
		cause = context.DeadlineExceeded
	}
	if errors.Is(err, l2.ErrOutcomeUnknown) {
		return l2.OutcomeUnknown(op, cause)
	}
	return &l2.BackendError{Op: op, Err: cause}
}

// CallerExpired reports whether ctx's deadline has passed (ctx.Err may lag
// it by a timer tick).
func CallerExpired(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// IsTimeout reports whether err is a deadline or cancellation running out
// rather than an answer: a context error, or a network timeout.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}
