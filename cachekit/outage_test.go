package cachekit

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

func TestRedisOutageGivesTypedErrorAndRecovers(t *testing.T) {
	t.Parallel()
	srv, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig("")})
	mustSet(t, c, "before", "kept")
	srv.Stop() // saves the data set, like a Redis with persistence
	ctx, cancel := context.WithTimeout(bg, 2*time.Second)
	defer cancel()
	var be *BackendError
	if err := c.Set(ctx, "during", "x"); !errors.As(err, &be) {
		t.Fatalf("Set during outage: %v, want *BackendError", err)
	}
	if _, err := Get[string](ctx, c, "before"); !errors.As(err, &be) {
		t.Fatalf("Get during outage: %v, want *BackendError", err)
	}
	if st := c.Stats(); st.L2Errors < 2 {
		t.Fatalf("errors not counted: %+v", st)
	}
	srv.Restart()
	var v string
	var err error
	if !testwait.Until(5*time.Second, func() bool { v, err = Get[string](bg, c, "before"); return err == nil }) {
		t.Fatalf("client did not recover: %v", err)
	}
	if v != "kept" {
		t.Fatalf("after restart: %q", v)
	}
	mustSet(t, c, "after", "y")
}
