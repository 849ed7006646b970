package l2

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	if fail("get", nil, "k") != nil {
		t.Fatal("nil error mapped to non-nil")
	}
	if err := fail("get", redis.Nil, "k"); err != ErrNotFound {
		t.Fatalf("redis.Nil mapped to %v", err)
	}
	if err := fail("get", fmt.Errorf("wrapped: %w", redis.Nil), "k"); err != ErrNotFound {
		t.Fatalf("wrapped redis.Nil mapped to %v", err)
	}
	cause := fmt.Errorf("read: %w", context.DeadlineExceeded)
	err := fail("mget", cause, "k")
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

func TestRedact(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		keys []string
	}{
		{"raw key", "ERR something about tenant:42:secret here", []string{"tenant:42:secret"}},
		{"quoted key", `redis: can't parse "a\nb"`, []string{"a\nb"}},
		{"several keys", "k1 and k2 and k1", []string{"k1", "k2"}},
		{"args echo", "ERR unknown command 'FOO', with args beginning with: 'tenant:42:secret' 'v'", []string{"tenant:42:secret"}},
		{"empty key ignored", "dial tcp: refused", []string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := redact(tc.msg, tc.keys)
			for _, k := range tc.keys {
				if k != "" && strings.Contains(got, k) {
					t.Fatalf("key survived redaction")
				}
			}
			if strings.Contains(got, "beginning with") {
				t.Fatalf("argument echo survived: %q", got)
			}
		})
	}
	if got := redact("dial tcp 127.0.0.1:1: connection refused", []string{"other"}); got != "dial tcp 127.0.0.1:1: connection refused" {
		t.Fatalf("message without keys changed: %q", got)
	}
}
