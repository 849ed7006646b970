package l2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/cachekit-io/cachekit-go/l2/internal/fence"
	"github.com/redis/go-redis/v9"
)

// Sentinel errors. Callers branch on them with errors.Is.
var (
	// ErrNotFound reports a missing (or just expired) key. It is what
	// go-redis's redis.Nil becomes; it is never wrapped in a BackendError.
	ErrNotFound = errors.New("l2: not found")

	// ErrInvalidTTL reports a write whose TTL is not positive. Redis would
	// store such a value forever (or reject it), so l2 refuses it before
	// sending anything.
	ErrInvalidTTL = errors.New("l2: ttl must be positive")

	// ErrClosed reports a call on a Store after Close.
	ErrClosed = errors.New("l2: store closed")

	// ErrWrongType reports a key that holds a Redis type other than a
	// string (a list, a hash...): not an entry l2 wrote. errors.Is finds it
	// through the *BackendError of the command that met it.
	ErrWrongType = errors.New("l2: key holds another Redis type")

	// ErrInvalidURL reports a Redis URL that Open cannot use. The URL
	// itself, which may carry a password, is never part of the message.
	ErrInvalidURL = errors.New("l2: invalid redis URL")
)

// errNoClient is the cause inside a BackendError for a Store built around a
// nil client.
var errNoClient = errors.New("no redis client")

// errUnexpectedReply is the cause inside a BackendError for a reply of a
// shape the command cannot produce.
var errUnexpectedReply = errors.New("unexpected reply type")

// BackendError reports a failed Redis operation: a network or server error,
// a timeout or a cancelled context. Op names the operation ("get", "set",
// "mget", ...); Err is the cause and stays reachable through errors.Is and
// errors.As (context.Canceled, context.DeadlineExceeded, net.Error, ...).
//
// The message never contains cache keys or values: when l2 builds a
// BackendError the message says what the cause is (a Redis reply without
// the argument echo some replies carry, a network or context error, or
// only the type of anything else), never what the request carried. Err
// itself is go-redis's error, as it is; do not log it on its own.
type BackendError struct {
	Op  string // operation, e.g. "get"
	Err error  // underlying cause

	msg       string // redacted rendering of Err, when l2 built the error
	wrongType bool   // Err is a WRONGTYPE reply: the error matches ErrWrongType
	unknown   bool   // a write that may have reached Redis: matches ErrOutcomeUnknown
}

// Error implements error: "l2: <op>: <cause>".
func (e *BackendError) Error() string {
	detail := e.msg
	if detail == "" && e.Err != nil {
		detail = e.Err.Error()
	}
	return "l2: " + e.Op + ": " + detail
}

// Unwrap returns the cause.
func (e *BackendError) Unwrap() error { return e.Err }

// Is makes a BackendError caused by a WRONGTYPE reply match ErrWrongType,
// and one of a write whose request may have reached Redis match
// ErrOutcomeUnknown.
func (e *BackendError) Is(target error) bool {
	return target == ErrWrongType && e.wrongType || target == ErrOutcomeUnknown && e.unknown
}

// OutcomeUnknown returns a *BackendError of op with cause err that matches
// ErrOutcomeUnknown: for a caller that renames the cause of such an error
// (a deadline it tells apart) and must keep what it says about the write.
func OutcomeUnknown(op string, err error) *BackendError {
	return &BackendError{Op: op, Err: err, unknown: true}
}

// WrongTypeError is returned by MGet and MGetWithTTL, together with the
// values they did read, when some keys hold another Redis type: MGET reads
// them as missing, and Index lists their positions in the keys passed, in
// increasing order. errors.Is matches it to ErrWrongType.
type WrongTypeError struct {
	Op    string
	Index []int
}

// Error implements error; it names how many keys, never which.
func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("l2: %s: %d of the keys hold another Redis type", e.Op, len(e.Index))
}

// Is matches ErrWrongType.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }

// PartialError is returned by MGet and MGetWithTTL on a cluster client,
// together with the values they did read, when the commands of some hash
// slots failed (a node down or hung) and the others answered: Index lists
// the positions, in the keys passed and in increasing order, of the keys
// that were not read (their values are nil), and Err is the first failure,
// a *BackendError, reachable with errors.Is and errors.As. Keys of another
// Redis type among those read are then read as missing.
type PartialError struct {
	Index []int
	Err   error
}

// Error implements error; it names how many keys, never which.
func (e *PartialError) Error() string {
	return fmt.Sprintf("l2: mget: %d of the keys not read: %v", len(e.Index), e.Err)
}

// Unwrap returns the first failure.
func (e *PartialError) Unwrap() error { return e.Err }

// fail maps an error of operation op to what l2 returns: nil stays nil,
// redis.Nil becomes ErrNotFound, anything else a *BackendError.
func fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		return ErrNotFound
	}
	var re redis.Error
	wrong := errors.As(err, &re) && strings.HasPrefix(re.Error(), "WRONGTYPE")
	return &BackendError{Op: op, Err: err, msg: describe(err), wrongType: wrong,
		unknown: writeOps[op] && re == nil && !unsent(err)}
}

// writeOps are the operations that change what Redis holds.
var writeOps = map[string]bool{"set": true, "mset": true, "del": true, "expire": true,
	"lease": true, "lock": true, "unlock": true, "marker": true, "swap": true}

// unsent reports whether err says the request never left: a refused or
// failed dial, an exhausted pool, a closed client, a write held by a fence
// past its deadline, a Store without a client. Everything else that is not
// a Redis reply (a timeout, a reset or closed connection, a cancelled
// context) leaves a write's outcome unknown.
func unsent(err error) bool {
	var oe *net.OpError
	return fence.Held(err) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, errNoClient) ||
		errors.As(err, &oe) && oe.Op == "dial"
}

// describe renders a cause for a BackendError message from what it is,
// never from the request's arguments or the wire's bytes:
//   - a Redis error reply: its code (the reply's first word, when it is
//     one) and this package's own description of that code;
//   - a network, context, end-of-stream or connection-pool error: its own
//     text, which go-redis and the net package build from addresses and
//     fixed words;
//   - anything else (a reply go-redis could not parse quotes the reply's
//     bytes, which may be a value): only its type.
func describe(err error) string {
	var re redis.Error
	if errors.As(err, &re) {
		if safeReplies[re.Error()] {
			return re.Error()
		}
		code, _, _ := strings.Cut(re.Error(), " ")
		if !isReplyCode(code) {
			return "Redis error reply"
		}
		if d, ok := replyCodes[code]; ok {
			return code + " " + d
		}
		return code + " (Redis error reply)"
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed),
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, errNoClient), errors.Is(err, errUnexpectedReply):
		return err.Error()
	}
	return fmt.Sprintf("unexpected error (%T)", err)
}

// replyCodes describes the Redis error codes callers meet, in this
// package's words: the text Redis sends after a code can quote arguments
// ("ERR unknown command 'FOO', with args beginning with: ...").
var replyCodes = map[string]string{
	"OOM":         "command not allowed when used memory > 'maxmemory'",
	"WRONGTYPE":   "operation against a key holding the wrong kind of value",
	"LOADING":     "Redis is loading the dataset in memory",
	"BUSY":        "Redis is busy running a script",
	"READONLY":    "cannot write against a read-only replica",
	"MASTERDOWN":  "link with the master is down",
	"CLUSTERDOWN": "the cluster is down",
	"TRYAGAIN":    "multi-key request during a slot migration, try again",
	"MOVED":       "slot moved to another node",
	"ASK":         "slot being migrated, ask another node",
	"NOAUTH":      "authentication required",
	"WRONGPASS":   "invalid username-password pair or user is disabled",
	"NOPERM":      "user has no permission for this command or key",
	"MISCONF":     "Redis cannot persist to disk; writes refused",
	"NOREPLICAS":  "not enough good replicas to write",
	"NOSCRIPT":    "no matching script",
	"EXECABORT":   "transaction discarded because of previous errors",
	"ERR":         "(Redis error reply; its text may quote arguments and is omitted)",
}

// safeReplies are whole error replies whose text is fixed by Redis (no
// argument in it), kept as they are because operators act on them.
var safeReplies = map[string]bool{
	"ERR DB index is out of range":                   true,
	"ERR invalid password":                           true,
	"ERR Client sent AUTH, but no password is set":   true,
	"ERR max number of clients reached":              true,
	"ERR This instance has cluster support disabled": true,
}

// isReplyCode reports whether s looks like a Redis error code: 2 to 16
// upper-case letters.
func isReplyCode(s string) bool {
	if len(s) < 2 || len(s) > 16 {
		return false
	}
	for _, r := range s {
		if r < 'A' || r > 'Z' {
			return false
		}
	}
	return true
}
