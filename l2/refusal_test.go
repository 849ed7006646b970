package l2

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// refusedBy starts a Tracker on addr and returns the error its Refused
// handler got, or nil when it settled without a refusal.
func refusedBy(t *testing.T, addr string) error {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	got := make(chan error, 1)
	tr := track(t, rdb, "p:", TrackingHandler{Refused: func(err error) { got <- err }})
	select {
	case <-tr.Settled():
	case <-time.After(5 * time.Second):
		t.Fatal("tracker did not settle")
	}
	select {
	case err := <-got:
		return err
	default:
		return nil
	}
}

// Every shape of refusal is told apart from an unreachable Redis: an ACL
// (real server), CLIENT renamed away (real server), and the replies of
// managed services no configuration reproduces (the harness's fake).
func TestTrackerRefusalShapes(t *testing.T) {
	t.Parallel()
	acl := redistest.Start(t)
	if _, err := redistest.Do(acl.Addr(), "ACL", "SETUSER", "default", "-client|tracking"); err != nil {
		t.Fatal(err)
	}
	renamed := redistest.StartArgs(t, "--rename-command", "CLIENT", "")
	shapes := map[string]string{
		"acl":     acl.Addr(),
		"renamed": renamed.Addr(),
		"unknown subcommand": redistest.StartFake(t, map[string]string{
			"client tracking": "-ERR unknown subcommand 'tracking'. Try CLIENT HELP."}).Addr(),
		"not allowed": redistest.StartFake(t, map[string]string{
			"client tracking": "-ERR command 'client|tracking' is not allowed"}).Addr(),
		"client id unknown": redistest.StartFake(t, map[string]string{
			"client id": "-ERR unknown command 'client', with args beginning with: 'id'"}).Addr(),
	}
	for name, addr := range shapes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			err := refusedBy(t, addr)
			var be *BackendError
			if !IsRefusal(err) || !errors.As(err, &be) || be.Op != "track" {
				t.Fatalf("refusal reported as %v", err)
			}
		})
	}
	t.Run("unreachable", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		if err := refusedBy(t, addr); err != nil {
			t.Fatalf("an unreachable Redis reported as refusing: %v", err)
		}
	})
	t.Run("auth", func(t *testing.T) {
		t.Parallel()
		f := redistest.StartFake(t, map[string]string{"client id": "-NOAUTH Authentication required."})
		if err := refusedBy(t, f.Addr()); err != nil {
			t.Fatalf("NOAUTH reported as a refusal: %v", err)
		}
	})
}

func TestRefusedReplyClassifiesOnlyServerReplies(t *testing.T) {
	t.Parallel()
	for _, err := range []error{nil, errors.New("NOPERM this user has no permissions"), net.ErrClosed} {
		if refusedReply(err) {
			t.Fatalf("%v classified as a refusal", err)
		}
	}
}
