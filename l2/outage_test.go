package l2

import (
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

const outageKey = "outage:tenant:key"

// every calls each Store method once and returns the errors by operation.
func every(s *Store) map[string]error {
	errs := map[string]error{
		"ping": s.Ping(bg),
		"set":  s.Set(bg, outageKey, []byte("v"), time.Minute),
		"mset": s.MSet(bg, []Item{{outageKey, []byte("v"), time.Minute}}),
	}
	_, errs["get"] = s.Get(bg, outageKey)
	_, _, errs["getttl"] = s.GetWithTTL(bg, outageKey)
	_, errs["del"] = s.Delete(bg, outageKey)
	_, errs["exists"] = s.Exists(bg, outageKey)
	_, errs["ttl"] = s.TTL(bg, outageKey)
	_, errs["mget"] = s.MGet(bg, []string{outageKey, "other"})
	_, errs["lock"] = s.TryLock(bg, outageKey, "t", time.Second)
	_, errs["unlock"] = s.Unlock(bg, outageKey, "t")
	return errs
}

func TestServerKilledThenRestarted(t *testing.T) {
	f := setup(t)
	if err := f.store.Set(bg, outageKey, []byte("before"), time.Minute); err != nil {
		t.Fatal(err)
	}
	f.srv.Kill()
	for op, err := range every(f.store) {
		if _, ok := asBackend(err); !ok {
			t.Errorf("%s with the server down = %v (%T), want *BackendError", op, err, err)
			continue
		}
		if errors.Is(err, ErrNotFound) {
			t.Errorf("%s with the server down reported not-found", op)
		}
		noKeyIn(t, err, outageKey)
	}

	f.srv.Restart()
	waitUp(t, f.store)
	for op, err := range every(f.store) {
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Errorf("%s after restart = %v", op, err)
		}
	}
	if err := f.store.Set(bg, outageKey, []byte("after"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if v, err := f.store.Get(bg, outageKey); err != nil || string(v) != "after" {
		t.Fatalf("Get after restart: %v", err)
	}
}

// Stop saves the data set; a restarted server serves it again.
func TestServerStoppedKeepsData(t *testing.T) {
	f := setup(t)
	if err := f.store.Set(bg, "persist", []byte("kept"), time.Hour); err != nil {
		t.Fatal(err)
	}
	f.srv.Stop()
	if _, err := f.store.Get(bg, "persist"); err == nil {
		t.Fatal("Get succeeded with the server stopped")
	}
	f.srv.Restart()
	waitUp(t, f.store)
	if v, err := f.store.Get(bg, "persist"); err != nil || string(v) != "kept" {
		t.Fatalf("Get after restart = %q, %v", v, err)
	}
}

// waitUp polls Ping until the server answers: go-redis may first hand out
// pooled connections to the dead process.
func waitUp(t *testing.T, s *Store) {
	t.Helper()
	testwait.For(t, 10*time.Second, func() bool { return s.Ping(bg) == nil }, "server answering after restart")
}

func TestUnreachableServer(t *testing.T) {
	rdb := newClientAt(unusedAddr(t))
	defer rdb.Close()
	if _, err := New(rdb).Get(bg, outageKey); err == nil {
		t.Fatal("Get against a closed port succeeded")
	} else if _, ok := asBackend(err); !ok {
		t.Fatalf("Get = %T, want *BackendError", err)
	} else {
		noKeyIn(t, err, outageKey)
	}
}
