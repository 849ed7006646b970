package observe

import (
	"context"
	"errors"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Errors is what the observer needs to know of its owner's own errors to
// tell how an operation ended and name an error's class; the errors of the
// packages below the owner (context, guard, l2, encryption, protocol) it
// knows itself.
type Errors struct {
	// NotFound is the owner's miss; Degraded reports a read FailOpen
	// turned into a miss (checked first: such an error matches NotFound
	// too).
	NotFound error
	Degraded func(error) bool
	// Unopened reports an entry that could not be opened, which the owner
	// returns as a miss (it matches NotFound) but the observer reports as
	// a failure of its class (auth_failed, format): tampering and foreign
	// writers stay visible on dashboards. Nil: none.
	Unopened func(error) bool
	// Negative reports a read answered by a cached "not found" (a
	// negative entry): outcome NegativeHit, no class. Nil: none.
	Negative func(error) bool
	// Closed is the owner's closed-client sentinel.
	Closed error
	// Invalid are the owner's refusals of a caller's input before any I/O.
	Invalid []error
	// OutcomeUnknown is the owner's error for a write whose bytes may
	// have reached Redis (class OutcomeUnknown, checked after the caller's
	// own cancellation and deadline, which keep their classes, and before
	// the Redis failure that left the outcome unknown). Nil: no error is
	// of that class.
	OutcomeUnknown error
}

// Outcome tells how a failed operation ended: a miss, a read FailOpen
// degraded, or an error of some class.
func (e *Errors) Outcome(err error) (Outcome, Class) {
	switch {
	case e.Degraded(err):
		return Degraded, NoClass
	case e.Negative != nil && e.Negative(err):
		return NegativeHit, NoClass
	case e.Unopened != nil && e.Unopened(err):
		return Failed, e.Class(err)
	case errors.Is(err, e.NotFound):
		return Miss, NoClass
	}
	return Failed, e.Class(err)
}

// Class names err's class: what a caller would branch on. A loader's error
// is class Loader only when the operation says so (Result.LoaderFailed),
// since the loader's error reaches the caller as it is.
func (e *Errors) Class(err error) Class {
	var be *l2.BackendError
	var fe *protocol.FormatError
	var pe *encryption.ProviderError
	switch {
	case errors.Is(err, context.Canceled):
		return Canceled
	case errors.Is(err, context.DeadlineExceeded):
		return Deadline
	case e.OutcomeUnknown != nil && errors.Is(err, e.OutcomeUnknown):
		return OutcomeUnknown
	case errors.Is(err, e.Closed):
		return Closed
	case errors.Is(err, guard.ErrCircuitOpen):
		return CircuitOpen
	case errors.Is(err, guard.ErrOverloaded):
		return Overloaded
	case errors.Is(err, l2.ErrWrongType):
		return WrongType
	case errors.As(err, &be):
		return Redis
	case errors.Is(err, encryption.ErrAuthFailed):
		return Auth
	case e.invalid(err):
		return Invalid
	case errors.As(err, &fe):
		return Format
	case errors.As(err, &pe):
		return Provider
	}
	return Other
}

func (e *Errors) invalid(err error) bool {
	for _, target := range e.Invalid {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
