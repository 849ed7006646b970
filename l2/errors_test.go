package l2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func newClientAt(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond,
	})
}

func TestFailMapping(t *testing.T) {
	if fail("get", nil) != nil {
		t.Fatal("nil error mapped to non-nil")
	}
	if err := fail("get", redis.Nil); err != ErrNotFound {
		t.Fatalf("redis.Nil mapped to %v", err)
	}
	if err := fail("get", fmt.Errorf("wrapped: %w", redis.Nil)); err != ErrNotFound {
		t.Fatalf("wrapped redis.Nil mapped to %v", err)
	}
	cause := fmt.Errorf("read: %w", context.DeadlineExceeded)
	err := fail("mget", cause)
	var be *BackendError
	if !errors.As(err, &be) || be.Op != "mget" || be.Err != cause {
		t.Fatalf("fail = %#v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatal("context error not reachable")
	}
	if got := err.Error(); got != "l2: mget: read: context deadline exceeded" {
		t.Fatalf("message %q", got)
	}
}

func TestBackendErrorBuiltByCaller(t *testing.T) {
	err := &BackendError{Op: "set", Err: errors.New("boom")}
	if err.Error() != "l2: set: boom" {
		t.Fatalf("message %q", err.Error())
	}
	if (&BackendError{Op: "x"}).Error() != "l2: x: " {
		t.Fatal("nil cause mishandled")
	}
}

// TestDescribeNeverEchoesArgs: a BackendError's message says what the
// cause is and never carries the request's keys or values, and it keeps
// the cause's own words intact (a one-letter key used to turn "connection
// refused" into "conn<key>ct...", and revealed the key).
func TestDescribeNeverEchoesArgs(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"network error intact", refused, refused.Error()},
		{"context error intact", context.Canceled, "context canceled"},
		{"ERR text omitted", redisReply("ERR unknown command 'FOO', with args beginning with: 'tenant:42:secret' 'v'"),
			"ERR (Redis error reply; its text may quote arguments and is omitted)"},
		{"known code described in our words", redisReply("OOM secret-value here"), "OOM command not allowed when used memory > 'maxmemory'"},
		{"unknown code kept alone", redisReply("NEWCODE secret-value"), "NEWCODE (Redis error reply)"},
		{"no code at all", redisReply("secret-value"), "Redis error reply"},
		{"unparsed reply: type only", fmt.Errorf("redis: can't parse %q", "secret-value"), "unexpected error (*errors.errorString)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := fail("get", tc.err).Error()
			if got != "l2: get: "+tc.want {
				t.Fatalf("message %q, want %q", got, "l2: get: "+tc.want)
			}
			if strings.Contains(got, "secret") {
				t.Fatalf("message carries request data: %q", got)
			}
		})
	}
}

// redisReply is an error reply as go-redis returns it.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// TestOneLetterKeyKeepsMessage: the read of key "e" from a Redis that
// refuses connections says "connection refused", unmangled.
func TestOneLetterKeyKeepsMessage(t *testing.T) {
	rdb := newClientAt(unusedAddr(t))
	t.Cleanup(func() { _ = rdb.Close() })
	_, err := New(rdb).Get(bg, "e")
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Get(e) from a refusing Redis: %v", err)
	}
}

// TestWrongTypeIsASentinel: a command that meets a key of another Redis
// type fails with a *BackendError that matches ErrWrongType (callers branch
// on it, not on the message).
func TestWrongTypeIsASentinel(t *testing.T) {
	if err := fail("get", redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")); !errors.Is(err, ErrWrongType) {
		t.Fatalf("WRONGTYPE reply: %v does not match ErrWrongType", err)
	}
	if err := fail("get", redisReply("OOM command not allowed")); errors.Is(err, ErrWrongType) {
		t.Fatal("an OOM reply matches ErrWrongType")
	}
}
