package l2

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
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

// TestAnnouncedWrites: a Store that announces writes sends "ck1 <source>
// <key>" for a Set (in its round trip), a Delete of one key and of two, a
// Fill, and Announce; never a value; each Store has its own source.
func TestAnnouncedWrites(t *testing.T) {
	f := setup(t)
	f.store.AnnounceWrites("inv", nil)
	in := subscribed(t, f)
	f.hook.reset()
	if err := f.store.Set(bg, "k", []byte("secret"), time.Minute); err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 1) // SET and PUBLISH in one pipelined round trip
	if got, _ := f.store.Get(bg, "k"); string(got) != "secret" {
		t.Fatalf("value: %q", got)
	}
	if n, err := f.store.Delete(bg, "k"); err != nil || n != 1 {
		t.Fatalf("Delete: %d %v", n, err)
	}
	if _, err := f.store.Delete(bg, "a", "b"); err != nil {
		t.Fatal(err)
	}
	lease := NewLease()
	if st, _, _, err := f.store.Acquire(bg, "f", lease, time.Minute, ""); err != nil || st != LeaseAcquired {
		t.Fatalf("Acquire: %v %v", st, err)
	}
	if ok, err := f.store.Fill(bg, "f", lease, []byte("secret"), time.Minute, false); !ok || err != nil {
		t.Fatalf("Fill: %v %v", ok, err)
	}
	if err := f.store.Announce(bg, "x", "y"); err != nil {
		t.Fatal(err)
	}
	src := string(f.store.source)
	var m []string
	for len(m) < 7 {
		select {
		case msg := <-in:
			if !strings.HasPrefix(msg.Payload, src) || strings.Contains(msg.Payload, "secret") {
				t.Fatalf("message %q (source %q)", msg.Payload, src)
			}
			m = append(m, strings.TrimPrefix(msg.Payload, src))
		case <-time.After(5 * time.Second):
			t.Fatalf("messages: %v", m)
		}
	}
	if fmt.Sprint(m) != "[k k a b f x y]" {
		t.Fatalf("keys announced: %v", m)
	}
	other := New(f.store.Client())
	other.AnnounceWrites("inv", nil)
	if !strings.HasPrefix(src, invalidationMagic) || string(other.source) == src {
		t.Fatalf("sources %q and %q", src, other.source)
	}
	if err := f.store.Set(bg, "k", []byte("v"), 0); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("zero TTL: %v", err)
	}
}

func TestTrackAndPublishOnNilClient(t *testing.T) {
	s := New(nil)
	if _, err := s.Track("", TrackingHandler{}); err == nil {
		t.Fatal("Track on a nil client")
	}
	if err := s.publish(bg, "c", []byte("x")); err == nil {
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
