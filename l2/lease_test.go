package l2

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/redis/go-redis/v9"
)

func TestLeaseLifecycle(t *testing.T) {
	t.Parallel()
	f := setup(t)
	a, b := NewLease(), NewLease()
	if !IsLease([]byte(a)) || a == b || len(a) != LeaseLen {
		t.Fatalf("leases %q %q", a, b)
	}
	if st, _, _, err := f.store.Acquire(bg, "k", a, time.Minute, ""); err != nil || st != LeaseAcquired {
		t.Fatalf("first Acquire = %v, %v", st, err)
	}
	// The same lease again (a retried Acquire whose reply was lost) is ours.
	if st, _, _, err := f.store.Acquire(bg, "k", a, time.Minute, ""); err != nil || st != LeaseAcquired {
		t.Fatalf("retried Acquire = %v, %v", st, err)
	}
	if st, _, left, err := f.store.Acquire(bg, "k", b, time.Minute, ""); err != nil || st != LeaseHeld || left <= 0 {
		t.Fatalf("second Acquire = %v %v, %v", st, left, err)
	}
	if ok, err := f.store.Fill(bg, "k", b, []byte("other's"), time.Minute, false); ok || err != nil {
		t.Fatalf("Fill with another's lease = %v, %v", ok, err)
	}
	if ok, err := f.store.Renew(bg, "k", a, 2*time.Minute); !ok || err != nil {
		t.Fatalf("Renew = %v, %v", ok, err)
	}
	if d, _ := f.rdb.PTTL(bg, "k").Result(); d <= time.Minute {
		t.Fatalf("renewed lease has %v left", d)
	}
	if ok, err := f.store.Fill(bg, "k", a, []byte("value"), time.Minute, false); !ok || err != nil {
		t.Fatalf("Fill = %v, %v", ok, err)
	}
	if ok, _ := f.store.Fill(bg, "k", a, []byte("again"), time.Minute, false); ok {
		t.Fatal("a lease filled twice")
	}
	if ok, _ := f.store.Renew(bg, "k", a, time.Minute); ok {
		t.Fatal("Renew extended a filled key")
	}
	st, v, left, err := f.store.Acquire(bg, "k", b, time.Minute, "")
	if err != nil || st != LeaseFoundEntry || string(v) != "value" || left <= 0 {
		t.Fatalf("Acquire over an entry = %v %q %v, %v", st, v, left, err)
	}
	// An entry the caller could not open is replaced when its digest matches.
	if st, _, _, _ := f.store.Acquire(bg, "k", b, time.Minute, Digest([]byte("not it"))); st != LeaseFoundEntry {
		t.Fatal("Acquire replaced an entry whose digest differs")
	}
	if st, _, _, _ := f.store.Acquire(bg, "k", b, time.Minute, Digest([]byte("value"))); st != LeaseAcquired {
		t.Fatal("Acquire did not replace the entry it was told to")
	}
	if ok, err := f.store.Release(bg, "k", a); ok || err != nil {
		t.Fatalf("Release of another's lease = %v, %v", ok, err)
	}
	if ok, err := f.store.Release(bg, "k", b); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if n, _ := f.rdb.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("Release left the key")
	}
	// A Fill after the lease expired, was deleted or overwritten stores nothing.
	_, _, _, _ = f.store.Acquire(bg, "k", a, time.Minute, "")
	f.rdb.Del(bg, "k")
	if ok, _ := f.store.Fill(bg, "k", a, []byte("late"), time.Minute, false); ok {
		t.Fatal("Fill after DEL stored")
	}
	if n, _ := f.rdb.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("Fill after DEL created the key")
	}
	f.rdb.LPush(bg, "list", "x")
	if _, _, _, err := f.store.Acquire(bg, "list", a, time.Minute, ""); !errors.Is(err, ErrWrongType) {
		t.Fatalf("Acquire on a list = %v, want ErrWrongType", err)
	}
	if _, _, _, err := f.store.Acquire(bg, "k", a, 0, ""); !errors.Is(err, ErrInvalidTTL) {
		t.Fatalf("Acquire ttl 0 = %v", err)
	}
}

func TestSetIfDigest(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.rdb.Set(bg, "k", "v1", time.Minute)
	if ok, err := f.store.SetIfDigest(bg, "k", Digest([]byte("v0")), 0, []byte("v2"), time.Minute, false); ok || err != nil {
		t.Fatalf("SetIfDigest with a stale digest = %v, %v", ok, err)
	}
	if ok, err := f.store.SetIfDigest(bg, "k", Digest([]byte("v1")), 0, []byte("v2"), time.Minute, false); !ok || err != nil {
		t.Fatalf("SetIfDigest = %v, %v", ok, err)
	}
	if v, _ := f.rdb.Get(bg, "k").Result(); v != "v2" {
		t.Fatalf("redis holds %q", v)
	}
	f.rdb.Del(bg, "k")
	if ok, _ := f.store.SetIfDigest(bg, "k", Digest([]byte("v2")), 0, []byte("v3"), time.Minute, false); ok {
		t.Fatal("SetIfDigest brought a deleted key back")
	}
}

// setupLeased is setup with a lease planted in leaseKey and the entry "v"
// in entryKey, each for a minute; it returns the lease.
func setupLeased(t *testing.T, leaseKey, entryKey string) (*fixture, string) {
	t.Helper()
	f := setup(t)
	lease := NewLease()
	f.rdb.Set(bg, leaseKey, lease, time.Minute)
	f.rdb.Set(bg, entryKey, "v", time.Minute)
	return f, lease
}

// Every read of l2 sees a key under a lease as missing, and every write
// that must not create or extend an entry leaves the lease alone.
func TestLeaseIsAbsentToEveryRead(t *testing.T) {
	t.Parallel()
	f, lease := setupLeased(t, "k", "other")
	if _, err := f.store.Get(bg, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get = %v", err)
	}
	if _, _, err := f.store.GetWithTTL(bg, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetWithTTL = %v", err)
	}
	if vals, err := f.store.MGet(bg, []string{"k", "other"}); err != nil || vals[0] != nil || string(vals[1]) != "v" {
		t.Fatalf("MGet = %q, %v", vals, err)
	}
	if vals, ttls, err := f.store.MGetWithTTL(bg, []string{"k", "other"}); err != nil || vals[0] != nil || ttls[0] != 0 || string(vals[1]) != "v" {
		t.Fatalf("MGetWithTTL = %q %v, %v", vals, ttls, err)
	}
	if ok, err := f.store.Exists(bg, "k"); ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if _, err := f.store.TTL(bg, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL = %v", err)
	}
	if ok, err := f.store.Expire(bg, "k", time.Hour); ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	if ok, err := f.store.SetCond(bg, "k", []byte("x"), time.Minute, true, false); ok || err != nil {
		t.Fatalf("SetCond XX = %v, %v", ok, err)
	}
	if vals, _, other, err := f.store.readRaw(bg, []string{"k"}); err != nil || vals[0] != nil || other[0] {
		t.Fatalf("ReadRaw = %q %v, %v", vals, other, err)
	}
	if v, _ := f.rdb.Get(bg, "k").Result(); v != lease {
		t.Fatal("a read replaced the lease")
	}
	if n, err := f.store.Delete(bg, "k", "other"); n != 1 || err != nil {
		t.Fatalf("Delete = %d, %v; want 1 (the lease is removed, not counted)", n, err)
	}
	if n, _ := f.rdb.Exists(bg, "k").Result(); n != 0 {
		t.Fatal("Delete left the lease")
	}
	f.rdb.Set(bg, "k", lease, time.Minute)
	if ok, err := f.store.SetCond(bg, "k", []byte("x"), time.Minute, false, false); !ok || err != nil {
		t.Fatalf("SetCond NX over a lease = %v, %v", ok, err)
	}
	// A value that only starts like a lease is an entry.
	f.rdb.Set(bg, "long", lease+"x", time.Minute)
	if v, err := f.store.Get(bg, "long"); err != nil || string(v) != lease+"x" {
		t.Fatalf("Get(long) = %q, %v", v, err)
	}
}

func TestCommandName(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var names []string
	f.rdb.AddHook(nameHook(func(cmd redis.Cmder) {
		n, k := seam.CommandName(cmd)
		names = append(names, n+" "+k)
	}))
	_, _, _, _ = f.store.Acquire(bg, "k", NewLease(), time.Minute, "")
	_, _ = f.store.Get(bg, "k")
	got := strings.Join(names, ",")
	if !strings.HasPrefix(got, "lease.acquire k,") || !strings.HasSuffix(got, ",get k") {
		t.Fatalf("names %s", got)
	}
}

type nameHook func(redis.Cmder)

func (h nameHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h nameHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h(cmd); return next(ctx, cmd) }
}
func (h nameHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// The bounded reads see a lease as missing too.
func TestLeaseIsAbsentToBoundedReads(t *testing.T) {
	t.Parallel()
	f := setup(t)
	f.rdb.Set(bg, "k", NewLease(), time.Minute)
	if _, err := f.store.GetUpTo(bg, "k", 1<<20); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetUpTo = %v", err)
	}
	if _, _, err := f.store.GetWithTTLUpTo(bg, "k", 1<<20); !errors.Is(err, ErrNotFound) {
		t.Fatalf("GetWithTTLUpTo = %v", err)
	}
}

// Over maxmemory (noeviction) Redis refuses scripts and writes but not
// reads or DEL: Exists, TTL and Delete still answer (they use no script),
// and Release gives a lease back with a plain DEL.
func TestLeaseReadsAndReleaseUnderOOM(t *testing.T) {
	t.Parallel()
	f, lease := setupLeased(t, "lease", "entry")
	f.rdb.Set(bg, "ballast", strings.Repeat("x", 4<<20), time.Minute)
	if err := f.rdb.ConfigSet(bg, "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.ConfigSet(bg, "maxmemory", "1mb").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.rdb.ConfigSet(bg, "maxmemory", "0") })
	if err := f.rdb.Set(bg, "probe", "x", time.Minute).Err(); err == nil || !strings.HasPrefix(err.Error(), "OOM") {
		t.Fatalf("redis is not over maxmemory: SET = %v", err)
	}
	if ok, err := f.store.Exists(bg, "entry"); !ok || err != nil {
		t.Fatalf("Exists(entry) = %v, %v", ok, err)
	}
	if ok, err := f.store.Exists(bg, "lease"); ok || err != nil {
		t.Fatalf("Exists(lease) = %v, %v", ok, err)
	}
	if _, err := f.store.TTL(bg, "lease"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL(lease) = %v", err)
	}
	if ok, err := f.store.Release(bg, "lease", lease); !ok || err != nil {
		t.Fatalf("Release under OOM = %v, %v", ok, err)
	}
	if n, err := f.store.Delete(bg, "entry"); n != 1 || err != nil {
		t.Fatalf("Delete under OOM = %d, %v", n, err)
	}
}
