package cachekit

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRedisOutageGivesTypedErrorAndRecovers(t *testing.T) {
	srv, rdb := withRedis(t)
	c := newClient(t, Options{Redis: rdb, Encryption: encConfig("")})
	if err := c.Set(bg, "before", "kept"); err != nil {
		t.Fatal(err)
	}
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
	deadline := time.Now().Add(5 * time.Second)
	for {
		v, err := Get[string](bg, c, "before")
		if err == nil {
			if v != "kept" {
				t.Fatalf("after restart: %q", v)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("client did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := c.Set(bg, "after", "y"); err != nil {
		t.Fatal(err)
	}
}
