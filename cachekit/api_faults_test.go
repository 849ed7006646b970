package cachekit

import (
	"context"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
)

// lostReply lets Redis apply the first SET ... NX, then reports a read
// timeout for it, as a dropped reply does.
type lostReply struct{ done atomic.Bool }

func (h *lostReply) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *lostReply) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *lostReply) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		args := cmd.Args()
		if cmd.Name() == "set" && len(args) > 0 && args[len(args)-1] == "nx" && h.done.CompareAndSwap(false, true) {
			e := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
			cmd.SetErr(e)
			return e
		}
		return err
	}
}

// TestSetIfAbsentLostReply: when Redis applied SET NX but the reply was
// lost and the retry finds the key taken, SetIfAbsent still reports that
// it stored (the bytes are its own).
func TestSetIfAbsentLostReply(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	rdb.AddHook(&lostReply{})
	c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Reliability: &Reliability{MaxAttempts: 3, RetryBaseDelay: time.Millisecond, DisableBreaker: true}})
	stored, err := c.SetIfAbsent(bg, "k", "mine", time.Minute)
	if v, gerr := Get[string](bg, c, "k"); !stored || err != nil || v != "mine" || gerr != nil {
		t.Fatalf("SetIfAbsent = %v, %v; Get = %q, %v; want stored, mine", stored, err, v, gerr)
	}
}

// TestTouchShortensL1: a backfill in flight while Touch shortens the TTL
// does not leave an L1 copy that outlives the Redis entry.
func TestTouchShortensL1(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSetTTL(t, c, "k", "v", time.Hour)
	c.DeleteLocal("k")
	h := redistest.NewHold("getrange", "k")
	rdb.AddHook(h)
	seam.Install(c.l2, h)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = Get[string](bg, c, "k") }()
	<-h.Held() // the read holds GETRANGE+PTTL's answer: an hour
	if err := c.Touch(bg, "k", 2*time.Second); err != nil {
		t.Fatal(err)
	}
	h.Release()
	<-done
	if left, ok := c.l1.Remaining("k"); ok && left > 3*time.Second {
		t.Fatalf("after Touch(2s) L1 holds the key for %v", left)
	}
}

// TestLargeSlotNotHeldForKeyDerivation: large operations waiting for a
// KeyProvider share its one derivation instead of deriving one after
// another while holding the only large-work slot.
func TestLargeSlotNotHeldForKeyDerivation(t *testing.T) {
	t.Parallel()
	// A bubble (no network here: L1 only) tells when every Set is blocked,
	// so the key service answers only once all four have arrived.
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		answer := make(chan struct{})
		prov := func(ctx context.Context) (encryption.Keys, error) {
			calls.Add(1)
			<-answer // a slow key service that then fails
			return encryption.Keys{}, errors.New("kms unavailable")
		}
		c := newClient(t, Options{L1MaxBytes: 64 << 20, LargeValueConcurrency: 1,
			Encryption: &encryption.Config{Provider: prov}})
		big := make([]byte, 1<<20)
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				var pe *ProviderError
				if err := c.Set(bg, "big", big); !errors.As(err, &pe) {
					t.Errorf("Set with the key service down = %v, want a *ProviderError", err)
				}
			})
		}
		// Each Set waits: for the derivation in flight, or (were the slot
		// held while deriving) for the slot.
		synctest.Wait()
		close(answer)
		wg.Wait()
		if n := calls.Load(); n > 2 {
			t.Fatalf("4 concurrent large Sets called the provider %d times: the slot serialized their derivations", n)
		}
	})
}

// TestSWRKeepsTheLoadersTTL: an entry a loader gave a shorter TTL with
// OverrideTTL is refreshed once it is due, not on every read.
func TestSWRKeepsTheLoadersTTL(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{Encryption: encConfig(""), SWR: &SWR{}})
	var calls atomic.Int32
	load := func(ctx context.Context) (string, error) {
		calls.Add(1)
		return "v", OverrideTTL(ctx, time.Minute)
	}
	for range 20 {
		if _, err := GetOrLoadTTL(bg, c, "k", 10*time.Minute, load); err != nil {
			t.Fatal(err)
		}
		c.swr.Wait() // any refresh a read started has finished
	}
	if n := calls.Load(); n > 2 {
		t.Fatalf("20 reads of a fresh 1-minute entry ran the loader %d times", n)
	}
}
