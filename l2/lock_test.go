package l2

import (
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

func TestLockContention(t *testing.T) {
	f := setup(t)
	s := f.store
	if ok, err := s.TryLock(bg, "lock:x", "A", time.Minute); !ok || err != nil {
		t.Fatalf("first TryLock = %v, %v", ok, err)
	}
	if ok, err := s.TryLock(bg, "lock:x", "B", time.Minute); ok || err != nil {
		t.Fatalf("second TryLock = %v, %v; want false, nil", ok, err)
	}
	if ok, err := s.TryLock(bg, "lock:x", "A", time.Minute); !ok || err != nil { // a retry of A's: still A's
		t.Fatalf("TryLock again with the holder's token = %v, %v; want true (a retry whose reply was lost)", ok, err)
	}
	// The wrong token releases nothing.
	if ok, err := s.Unlock(bg, "lock:x", "B"); ok || err != nil {
		t.Fatalf("Unlock with the wrong token = %v, %v", ok, err)
	}
	if v := f.rdb.Get(bg, "lock:x").Val(); v != "A" {
		t.Fatal("wrong-token Unlock changed the lock")
	}
	if ok, err := s.Unlock(bg, "lock:x", "A"); !ok || err != nil {
		t.Fatalf("Unlock by the holder = %v, %v", ok, err)
	}
	if ok, err := s.Unlock(bg, "lock:x", "A"); ok || err != nil {
		t.Fatalf("second Unlock = %v, %v; want false", ok, err)
	}
	if ok, err := s.TryLock(bg, "lock:x", "B", time.Minute); !ok || err != nil {
		t.Fatalf("TryLock after release = %v, %v", ok, err)
	}
	if ttl := f.rdb.PTTL(bg, "lock:x").Val(); ttl <= 0 || ttl > time.Minute {
		t.Fatalf("lock PTTL %v, want in (0, 1m]", ttl)
	}
}

func TestLockOnlyOneWinner(t *testing.T) {
	f := setup(t)
	var winners atomic.Int32
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range 8 {
		wg.Go(func() {
			<-start
			ok, err := f.store.TryLock(bg, "lock:race", "token-"+strconv.Itoa(i), time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				winners.Add(1)
			}
		})
	}
	close(start)
	wg.Wait()
	if n := winners.Load(); n != 1 {
		t.Fatalf("%d goroutines took the lock, want exactly 1", n)
	}
}

func TestLockExpires(t *testing.T) {
	f := setup(t)
	if ok, _ := f.store.TryLock(bg, "lock:ttl", "A", 50*time.Millisecond); !ok {
		t.Fatal("TryLock failed")
	}
	testwait.For(t, 5*time.Second, func() bool {
		ok, err := f.store.TryLock(bg, "lock:ttl", "B", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}, "a 50ms lock expiring")
	// The expired holder cannot release the new holder's lock.
	if ok, _ := f.store.Unlock(bg, "lock:ttl", "A"); ok {
		t.Fatal("expired holder released someone else's lock")
	}
}

// Unlock must work on a server whose script cache is empty (EVALSHA fails
// with NOSCRIPT and the script falls back to EVAL).
func TestUnlockAfterScriptFlush(t *testing.T) {
	f := setup(t)
	f.store.TryLock(bg, "lock:s", "A", time.Minute)
	if ok, err := f.store.Unlock(bg, "lock:s", "B"); ok || err != nil { // loads the script
		t.Fatalf("Unlock(wrong) = %v, %v", ok, err)
	}
	if err := f.rdb.ScriptFlush(bg).Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.store.Unlock(bg, "lock:s", "A"); !ok || err != nil {
		t.Fatalf("Unlock after SCRIPT FLUSH = %v, %v", ok, err)
	}
}

func TestLockOnNonStringKeyIsBackendError(t *testing.T) {
	f := setup(t)
	f.rdb.LPush(bg, "lock:list", "x")
	_, err := f.store.Unlock(bg, "lock:list", "A")
	if _, ok := asBackend(err); !ok || errors.Is(err, ErrNotFound) {
		t.Fatalf("Unlock on a list = %v, want *BackendError", err)
	}
	noKeyIn(t, err, "lock:list")
}
