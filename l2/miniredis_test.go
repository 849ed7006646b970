package l2

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// These tests run the Store against miniredis, an in-process fake, so that
// `go test -short` (which skips the real-server tests) still covers every
// method. The real-server tests remain the reference.
func miniStore(t *testing.T) (*miniredis.Miniredis, *Store) {
	t.Helper()
	m := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr(), Protocol: 2, DisableIdentity: true,
		DialerRetries: 1, DialerRetryTimeout: 10 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	return m, New(rdb)
}

func TestMiniredisWholeAPI(t *testing.T) {
	m, s := miniStore(t)
	v := allBytes()
	if err := s.Set(bg, "k", v, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(bg, "k"); err != nil || !bytes.Equal(got, v) {
		t.Fatalf("Get = %d bytes, %v", len(got), err)
	}
	if got, ttl, err := s.GetWithTTL(bg, "k"); err != nil || !bytes.Equal(got, v) || ttl != 10*time.Second {
		t.Fatalf("GetWithTTL: ttl %v, err %v", ttl, err)
	}
	if ok, err := s.Exists(bg, "k"); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if err := s.MSet(bg, []Item{{"a", []byte("A"), time.Second}, {"b", []byte("B"), time.Minute}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.MGet(bg, []string{"a", "zz", "b"})
	if err != nil || string(got[0]) != "A" || got[1] != nil || string(got[2]) != "B" {
		t.Fatalf("MGet = %q, %v", got, err)
	}

	m.FastForward(time.Second) // "a" expires, "b" and "k" do not
	if _, err := s.Get(bg, "a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired key: %v", err)
	}
	if d, err := s.TTL(bg, "k"); err != nil || d != 9*time.Second {
		t.Fatalf("TTL after 1s = %v, %v", d, err)
	}

	if ok, _ := s.TryLock(bg, "l", "A", time.Second); !ok {
		t.Fatal("TryLock failed")
	}
	if ok, _ := s.TryLock(bg, "l", "B", time.Second); ok {
		t.Fatal("second holder took the lock")
	}
	if ok, _ := s.Unlock(bg, "l", "B"); ok {
		t.Fatal("wrong token released the lock")
	}
	if ok, _ := s.Unlock(bg, "l", "A"); !ok {
		t.Fatal("holder could not release the lock")
	}
	if n, err := s.Delete(bg, "k", "b", "zz"); n != 2 || err != nil {
		t.Fatalf("Delete = %d, %v", n, err)
	}
}

func TestMiniredisErrorsAreBackendErrors(t *testing.T) {
	m, s := miniStore(t)
	m.SetError("LOADING tenant:42:secret is loading") // every command fails
	_, err := s.Get(bg, "tenant:42:secret")
	if _, ok := asBackend(err); !ok {
		t.Fatalf("Get = %v, want *BackendError", err)
	}
	noKeyIn(t, err, "tenant:42:secret")
	m.SetError("")
	m.Close()
	if err := s.Ping(bg); err == nil {
		t.Fatal("Ping on a closed server succeeded")
	} else if _, ok := asBackend(err); !ok {
		t.Fatalf("Ping = %T, want *BackendError", err)
	}
}
