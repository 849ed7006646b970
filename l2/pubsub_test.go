package l2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// inbox collects what a Subscription delivers.
type inbox struct {
	mu      sync.Mutex
	msgs    []string
	lost    int
	resub   int
	lostErr error
}

func (in *inbox) handler() SubscriptionHandler {
	return SubscriptionHandler{
		Message: func(p []byte) { in.mu.Lock(); in.msgs = append(in.msgs, string(p)); in.mu.Unlock() },
		Lost:    func(err error) { in.mu.Lock(); in.lost++; in.lostErr = err; in.mu.Unlock() },
		Resubscribed: func() {
			in.mu.Lock()
			in.resub++
			in.mu.Unlock()
		},
	}
}

func (in *inbox) snapshot() (msgs []string, lost, resub int) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]string(nil), in.msgs...), in.lost, in.resub
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// subscribed subscribes an inbox to channel "inv" of f's store, waits until
// the subscription is live and closes it when t ends.
func subscribed(t *testing.T, f *fixture) (*inbox, *Subscription) {
	t.Helper()
	in := &inbox{}
	sub, err := f.store.Subscribe("inv", in.handler())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sub.Close() })
	<-sub.Ready()
	return in, sub
}

func TestSetPublishDeletePublish(t *testing.T) {
	f := setup(t)
	in, _ := subscribed(t, f)
	f.hook.reset()
	if err := f.store.SetPublish(bg, "k", []byte("v"), time.Minute, "inv", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 1) // SET and PUBLISH in one pipelined round trip
	if got, _ := f.store.Get(bg, "k"); string(got) != "v" {
		t.Fatalf("value: %q", got)
	}
	existed, err := f.store.DeletePublish(bg, "k", "inv", []byte("m2"))
	if err != nil || !existed {
		t.Fatalf("DeletePublish: %v %v", existed, err)
	}
	if err := f.store.Publish(bg, "inv", []byte("m3"), []byte("m4")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "4 messages", func() bool { m, _, _ := in.snapshot(); return len(m) == 4 })
	if m, _, _ := in.snapshot(); fmt.Sprint(m) != "[m1 m2 m3 m4]" {
		t.Fatalf("messages: %v", m)
	}
	if err := f.store.SetPublish(bg, "k", []byte("v"), 0, "inv", nil); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero TTL: %v", err)
	}
}

func TestSubscriptionReportsLossAndResubscribes(t *testing.T) {
	f := setup(t)
	in, sub := subscribed(t, f)
	f.srv.Kill()
	waitUntil(t, "loss reported", func() bool { _, l, _ := in.snapshot(); return l == 1 })
	f.srv.Restart()
	waitUntil(t, "resubscribed", func() bool { _, _, r := in.snapshot(); return r == 1 })
	if err := f.store.Publish(bg, "inv", []byte("after")); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "message after restart", func() bool { m, _, _ := in.snapshot(); return len(m) == 1 })
	in.mu.Lock()
	var be *BackendError
	ok := errors.As(in.lostErr, &be) && be.Op == "subscribe"
	in.mu.Unlock()
	if !ok {
		t.Fatalf("loss error: %v", in.lostErr)
	}
	_ = sub.Close()
	_ = sub.Close() // idempotent
}

func TestSubscribeOnClosedStore(t *testing.T) {
	s := New(nil)
	if _, err := s.Subscribe("c", SubscriptionHandler{}); err == nil {
		t.Fatal("Subscribe on a nil client")
	}
	if err := s.Publish(bg, "c", []byte("x")); err == nil {
		t.Fatal("Publish on a nil client")
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestIsTransient(t *testing.T) {
	be := func(err error) error { return &BackendError{Op: "get", Err: err} }
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{ErrNotFound, false},
		{ErrInvalidTTL, false},
		{ErrClosed, false},
		{be(context.Canceled), false},
		{be(redis.ErrClosed), false},
		{be(errors.New("WRONGTYPE Operation against a key")), false},
		{be(context.DeadlineExceeded), true},
		{be(io.EOF), true},
		{be(syscall.ECONNREFUSED), true},
		{be(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), true},
		{be(timeoutErr{}), true},
		{be(redis.ErrPoolTimeout), true},
	}
	for i, c := range cases {
		if got := IsTransient(c.err); got != c.want {
			t.Errorf("case %d (%v): %v, want %v", i, c.err, got, c.want)
		}
	}
}

func TestIsTransientRedisReplies(t *testing.T) {
	f := setup(t)
	// A real server error reply: permanent.
	_ = f.rdb.Set(bg, "s", "x", 0).Err()
	_, err := f.store.Exists(bg, "s")
	if err != nil {
		t.Fatal(err)
	}
	err = f.rdb.LPush(bg, "s", "x").Err()
	if err == nil || IsTransient(fail("lpush", err, "s")) {
		t.Fatalf("WRONGTYPE judged transient: %v", err)
	}
	// The server going away: transient.
	f.srv.Kill()
	defer f.srv.Restart()
	_, err = f.store.Get(bg, "s")
	if err == nil || !IsTransient(err) {
		t.Fatalf("server down judged permanent: %v", err)
	}
}
