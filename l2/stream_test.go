package l2

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
)

// callerMark marks the ctx of the Store's callers in these tests: a
// go-redis hook that sees it saw a command sent on its caller's ctx,
// outside the auto-pipelined stream (whose batches run on the pipeliner's
// background context).
type callerMark struct{}

// ctxSeen counts, per command name, the commands go-redis hooks saw on a
// caller's ctx (direct) and on another (pipelined).
type ctxSeen struct {
	mu               sync.Mutex
	direct, streamed map[string]int
}

func newCtxSeen() *ctxSeen {
	return &ctxSeen{direct: map[string]int{}, streamed: map[string]int{}}
}

func (h *ctxSeen) see(ctx context.Context, cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		name, _ := seam.CommandName(c)
		if ctx.Value(callerMark{}) != nil {
			h.direct[name]++
		} else {
			h.streamed[name]++
		}
	}
}

func (h *ctxSeen) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *ctxSeen) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.see(ctx, cmd); return next(ctx, cmd) }
}
func (h *ctxSeen) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.see(ctx, cmds...); return next(ctx, cmds) }
}

// streamed returns a Store on the auto-pipelined stream with a ctxSeen
// hook, and the ctx its callers use.
func streamed(t *testing.T) (*fixture, *ctxSeen, context.Context) {
	t.Helper()
	f := setup(t)
	seen := newCtxSeen()
	f.rdb.AddHook(seen)
	if err := f.store.AutoPipeline(0); err != nil {
		t.Fatal(err)
	}
	return f, seen, context.WithValue(context.Background(), callerMark{}, true)
}

// busy keeps one call of f's Store in flight (held by a Seam after its
// reply) until the test ends, so that no later caller is alone: each goes
// through the stream.
func busy(t *testing.T, f *fixture, more ...seam.Hook) {
	t.Helper()
	h := redistest.NewHold("exists", "busy")
	seam.Install(f.store, seams(append([]seam.Hook{h}, more...)))
	done := make(chan struct{})
	go func() { defer close(done); _, _ = f.store.Exists(bg, "busy") }()
	<-h.Held()
	t.Cleanup(func() { h.Release(); <-done })
}

// seams calls each of its Seams in turn.
type seams []seam.Hook

func (ss seams) Before(cmd redis.Cmder) {
	for _, s := range ss {
		s.Before(cmd)
	}
}

func (ss seams) After(cmd redis.Cmder) {
	for _, s := range ss {
		s.After(cmd)
	}
}

// TestStreamCarriesSingleKeyCommands fails if a single-key command of the
// Store bypasses the pipeliner: every command a go-redis hook sees must
// run on the pipeliner's context, none on the caller's.
func TestStreamCarriesSingleKeyCommands(t *testing.T) {
	t.Parallel()
	f, seen, ctx := streamed(t)
	busy(t, f)
	s := f.store
	must := func(err error) {
		t.Helper()
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
	}
	must(s.Set(ctx, "k", []byte("v"), time.Minute))
	_, err := s.Get(ctx, "k")
	must(err)
	_, err = s.GetUpTo(ctx, "k", 1<<20)
	must(err)
	_, _, err = s.GetWithTTLUpTo(ctx, "k", 1<<20)
	must(err)
	_, err = s.Exists(ctx, "k")
	must(err)
	_, err = s.TTL(ctx, "k")
	must(err)
	_, err = s.Expire(ctx, "k", time.Minute)
	must(err)
	_, err = s.SetCond(ctx, "k", []byte("w"), time.Minute, true, false)
	must(err)
	_, err = s.Delete(ctx, "k")
	must(err)
	lease := NewLease()
	_, _, _, err = s.Acquire(ctx, "l", lease, time.Minute, "")
	must(err)
	_, err = s.Renew(ctx, "l", lease, time.Minute)
	must(err)
	_, err = s.Fill(ctx, "l", lease, []byte("v"), time.Minute, false)
	must(err)
	_, err = s.SetIfDigest(ctx, "l", Digest([]byte("v")), 0, []byte("w"), time.Minute, false)
	must(err)
	_, err = s.TryLock(ctx, "lock", "t", time.Minute)
	must(err)
	_, err = s.Unlock(ctx, "lock", "t")
	must(err)
	_, err = s.Marker(ctx, "marker", "m")
	must(err)
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.direct) != 0 {
		t.Errorf("sent on the caller's ctx, outside the stream: %v", seen.direct)
	}
	if seen.streamed["exists"] < 2 { // busy's, sent alone, went directly
		t.Errorf("Exists did not go through the stream (saw %v)", seen.streamed)
	}
	for _, name := range []string{"set", "get", "getrange", "pttl", "strlen", "del",
		"lease.acquire", "lease.renew", "lease.fill", "lease.cas", "lease.release"} {
		if seen.streamed[name] == 0 {
			t.Errorf("no %s went through the stream (saw %v)", name, seen.streamed)
		}
	}
}

// TestStreamLargeBypasses: a value over the stream's byte limit is written
// and read off the stream, on the caller's ctx.
func TestStreamLargeBypasses(t *testing.T) {
	t.Parallel()
	f, seen, ctx := streamed(t)
	busy(t, f)
	big := bytes.Repeat([]byte{7}, f.store.stream.maxBytes+1)
	if err := f.store.Set(ctx, "big", big, time.Minute); err != nil {
		t.Fatal(err)
	}
	_, _, err := f.store.GetWithTTLUpTo(ctx, "big", 1<<20)
	n, long := IsLong(err)
	if !long || n != len(big) {
		t.Fatalf("GetWithTTLUpTo of %d bytes = %v, want a *LongError with the length", len(big), err)
	}
	got, ttl, err := f.store.GetLongWithTTLUpTo(ctx, "big", 1<<20)
	if err != nil || !bytes.Equal(got, big) || ttl <= 0 {
		t.Fatalf("GetLongWithTTLUpTo = %d bytes, %v, %v", len(got), ttl, err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	// The read asked the stream for the first maxBytes+1 bytes and the
	// length, then read the value off it.
	if seen.direct["set"] != 1 || seen.direct["getrange"] != 1 || seen.streamed["pttl"] != 1 || seen.streamed["strlen"] < 1 {
		t.Fatalf("direct %v, streamed %v", seen.direct, seen.streamed)
	}
}

// TestStreamHoldsOneCaller: a Seam holding one command's caller holds
// that caller only; other commands on the stream go on.
func TestStreamHoldsOneCaller(t *testing.T) {
	t.Parallel()
	f, seen, ctx := streamed(t)
	h := redistest.NewHold("set", "k")
	busy(t, f, h) // the held Set rides the stream too
	done := make(chan error, 1)
	go func() { done <- f.store.Set(ctx, "k", []byte("a"), time.Minute) }()
	<-h.Held()
	for i := range 20 {
		if err := f.store.Set(ctx, "other", []byte{byte(i)}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := f.store.Get(ctx, "k"); err != nil || string(b) != "a" {
		t.Fatalf("Get(k) = %q, %v while its Set is held after Redis applied it", b, err)
	}
	h.Release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.direct) != 0 {
		t.Fatalf("sent outside the stream: %v", seen.direct)
	}
}

// TestStreamLoneCallerGoesDirect: a caller alone on the Store sends on
// its own ctx, skipping the pipeliner's hand-off.
func TestStreamLoneCallerGoesDirect(t *testing.T) {
	t.Parallel()
	f, seen, ctx := streamed(t)
	if err := f.store.Set(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if seen.direct["set"] != 1 || len(seen.streamed) != 0 {
		t.Fatalf("direct %v, streamed %v", seen.direct, seen.streamed)
	}
}

// TestStreamDropsAbandonedUnsent: a command whose caller stopped waiting
// while it was still queued behind a stuck batch is never sent: once the
// stream moves again it is dropped, not applied long after its caller was
// told the outcome was open (the nemesis run read such a Set back 2.4 s
// after its caller's error, over other processes' writes). The commands
// behind it keep their order and run.
func TestStreamDropsAbandonedUnsent(t *testing.T) {
	t.Parallel()
	f, _, ctx := streamed(t)
	busy(t, f)
	stuck := redistest.NewHoldBefore("set", "first") // holds the batch before it is sent
	f.rdb.AddHook(stuck)
	defer stuck.Release()
	first := make(chan error, 1)
	go func() { first <- f.store.Set(ctx, "first", []byte("1"), time.Minute) }()
	<-stuck.Held()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := f.store.Set(dctx, "k", []byte("old"), time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set queued behind a stuck batch = %v, want DeadlineExceeded", err)
	}
	after := make(chan error, 1)
	go func() { after <- f.store.Set(ctx, "after", []byte("2"), time.Minute) }()
	stuck.Release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-after; err != nil {
		t.Fatal(err)
	}
	if err := f.store.settle(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := f.rdb.Exists(bg, "k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS k = %d, %v: the abandoned Set was sent after its caller gave up", n, err)
	}
	if b, err := f.rdb.Get(bg, "after").Bytes(); err != nil || string(b) != "2" {
		t.Fatalf("the Set queued after it: %q, %v", b, err)
	}
}

// TestStreamHonoursDeadline: a caller whose command waits in a stuck
// stream returns context.DeadlineExceeded at its deadline; its abandoned
// write, dispatched before it was abandoned (its batch is held in a hook),
// still runs, and a write sent off the stream waits for it.
func TestStreamHonoursDeadline(t *testing.T) {
	t.Parallel()
	f, _, ctx := streamed(t)
	busy(t, f)
	stuck := redistest.NewHoldBefore("set", "k") // a go-redis hook: holds the batch
	f.rdb.AddHook(stuck)
	defer stuck.Release()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := f.store.Set(dctx, "k", []byte("old"), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set in a stuck stream = %v, want DeadlineExceeded", err)
	}
	big := bytes.Repeat([]byte{'n'}, f.store.stream.maxBytes+1)
	wrote := make(chan error, 1)
	go func() { wrote <- f.store.Set(ctx, "k", big, time.Minute) }()
	select {
	case err := <-wrote:
		t.Fatalf("a large Set overtook an abandoned one: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	stuck.Release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if b, err := f.rdb.Get(bg, "k").Bytes(); err != nil || !bytes.Equal(b, big) {
		t.Fatalf("Redis holds %d bytes, %v; want the later, large value", len(b), err)
	}
}
