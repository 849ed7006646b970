package l2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, 5*time.Second, cond, what)
}

// subscribed subscribes to channel "inv" with the store's own go-redis
// client and returns the channel of payloads (as an earlier release of the
// library listens).
func subscribed(t *testing.T, f *fixture) <-chan *redis.Message {
	t.Helper()
	ps := f.store.Client().Subscribe(bg, "inv")
	if _, err := ps.Receive(bg); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ps.Close() })
	return ps.Channel()
}

func TestSetPublishDeletePublish(t *testing.T) {
	f := setup(t)
	in := subscribed(t, f)
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
	var m []string
	for len(m) < 4 {
		select {
		case msg := <-in:
			m = append(m, msg.Payload)
		case <-time.After(5 * time.Second):
			t.Fatalf("messages: %v", m)
		}
	}
	if fmt.Sprint(m) != "[m1 m2 m3 m4]" {
		t.Fatalf("messages: %v", m)
	}
	if err := f.store.SetPublish(bg, "k", []byte("v"), 0, "inv", nil); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero TTL: %v", err)
	}
}

func TestTrackAndPublishOnNilClient(t *testing.T) {
	s := New(nil)
	if _, err := s.Track("", TrackingHandler{}); err == nil {
		t.Fatal("Track on a nil client")
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
	if err == nil || IsTransient(fail("lpush", err)) {
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
