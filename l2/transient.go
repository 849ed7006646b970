package l2

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// transientReplies are Redis error reply prefixes that describe a passing
// server condition (loading a data set, a failover, a busy script), after
// which the same command may succeed.
var transientReplies = []string{"LOADING", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "BUSY", "READONLY"}

// IsTransient reports whether err, returned by a Store method, describes a
// condition that may pass by itself: a refused, reset or closed connection,
// a network timeout, an exhausted connection pool, or one of Redis's
// "try again later" replies. Retrying such an error can succeed; retrying
// anything else (a missing key, a bad TTL, a wrong-type reply, a closed
// Store, a cancelled context) cannot. A context deadline counts as
// transient: the caller decides with its own ctx whether to try again.
func IsTransient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, ErrNotFound), errors.Is(err, ErrInvalidTTL),
		errors.Is(err, ErrClosed), errors.Is(err, ErrInvalidURL),
		errors.Is(err, errNoClient), errors.Is(err, context.Canceled),
		errors.Is(err, redis.ErrClosed):
		return false
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE), errors.Is(err, net.ErrClosed):
		return true
	}
	var re redis.Error
	if errors.As(err, &re) {
		msg := re.Error()
		for _, p := range transientReplies {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne)
}

// Migrating reports whether err holds Redis's TRYAGAIN reply: a multi-key
// command met a cluster slot being moved. It is transient, but the server
// answered: it says nothing against the server.
func Migrating(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "TRYAGAIN")
}

// Answered reports whether err (from a PING) shows Redis answering: no
// error, or an error reply from the server itself (LOADING, NOAUTH...). A
// timeout, a refused or closed connection, a TLS or dial failure do not.
func Answered(err error) bool {
	var re redis.Error
	return err == nil || errors.As(err, &re)
}
