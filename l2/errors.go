package l2

import (
	"errors"
	"strconv"
	"strings"

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
// BackendError it removes every key of the request from the cause's text,
// and drops the argument echo that some Redis replies carry. Err itself is
// go-redis's error, unredacted; do not log it on its own.
type BackendError struct {
	Op  string // operation, e.g. "get"
	Err error  // underlying cause

	msg string // redacted rendering of Err, when l2 built the error
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

// fail maps an error of operation op to what l2 returns: nil stays nil,
// redis.Nil becomes ErrNotFound, anything else a *BackendError whose message
// has the request's keys removed.
func fail(op string, err error, keys ...string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, redis.Nil) {
		return ErrNotFound
	}
	return &BackendError{Op: op, Err: err, msg: redact(err.Error(), keys)}
}

// redactedKey replaces a key found in an error message.
const redactedKey = "<key>"

// redact removes every non-empty key, raw or in its Go-quoted form, from
// msg, and cuts the argument list that Redis appends to some errors
// ("... with args beginning with: ...").
func redact(msg string, keys []string) string {
	if i := strings.Index(msg, "with args beginning with"); i >= 0 {
		msg = strings.TrimRight(msg[:i], " ,") + " (arguments omitted)"
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, k, redactedKey)
		if q := strconv.Quote(k); q[1:len(q)-1] != k {
			msg = strings.ReplaceAll(msg, q[1:len(q)-1], redactedKey)
		}
	}
	return msg
}
