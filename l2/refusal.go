package l2

import (
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrRefused reports that Redis answered but will not run a command the
// Tracker or a Subscribe needs (CLIENT ID, CLIENT TRACKING, SUBSCRIBE):
// an ACL without the right, a command a managed service removed or
// renamed, a server too old to know it. Trying again later gives the same
// answer until an operator changes the server; it is not an outage.
// errors.Is finds it through the *BackendError the Tracker reports.
var ErrRefused = errors.New("l2: redis refuses the command")

// refusal marks a Redis reply that IsRefusal classified; the reply stays
// reachable through Unwrap.
type refusal struct{ err error }

func (r refusal) Error() string        { return r.err.Error() }
func (r refusal) Unwrap() []error      { return []error{ErrRefused, r.err} }
func (r refusal) Is(target error) bool { return target == ErrRefused }

// refusedReply reports whether err is a Redis error reply saying the
// command will not be run for this connection, in the shapes servers and
// managed services give:
//
//	NOPERM this user has no permissions to run the 'client|tracking' command
//	NOPERM this user has no permissions to access one of the channels ...
//	ERR unknown subcommand 'tracking'. Try CLIENT HELP.
//	ERR Unknown subcommand or wrong number of arguments for 'TRACKING' (Redis 5)
//	ERR unknown command 'client', with args beginning with: ... (renamed away)
//	ERR command 'client|tracking' is not allowed
//	ERR The user executing the script can't publish to the channel ... (in a script)
//
// Authentication failures (NOAUTH, WRONGPASS), LOADING, READONLY and every
// network error are not refusals: they say nothing about the command.
func refusedReply(err error) bool {
	var re redis.Error
	if err == nil || !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(re.Error())
	switch {
	case strings.HasPrefix(msg, "noperm"):
		return true
	case !strings.HasPrefix(msg, "err "):
		return false
	}
	return strings.Contains(msg, "unknown subcommand") || strings.Contains(msg, "unknown command") ||
		strings.Contains(msg, "not allowed") || strings.HasPrefix(msg, "err the user executing the script can't")
}

// classify marks err as a refusal when it is one (see refusedReply).
func classify(err error) error {
	if refusedReply(err) {
		return refusal{err}
	}
	return err
}

// IsRefusal reports whether err matches ErrRefused: Redis refused a
// command rather than failed to answer.
func IsRefusal(err error) bool { return errors.Is(err, ErrRefused) }

// Declined reports whether err is Redis declining to run a command it
// would run for another user or at another time: a refusal (IsRefusal) or
// an OOM reply (over maxmemory with noeviction, which refuses a script as
// a writer before it runs).
func Declined(err error) bool {
	var re redis.Error
	return IsRefusal(err) || refusedReply(err) || errors.As(err, &re) && strings.HasPrefix(re.Error(), "OOM")
}
