package cachekit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// Behind Sentinel, writes by another client reach L1 before and after a
// failover, and the failover itself is a tracking loss (L1 cleared).
func TestTrackingSentinelFailover(t *testing.T) {
	t.Parallel()
	sen := redistest.StartSentinel(t)
	failover := func() *redis.Client {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: sen.SentinelAddrs()})
		t.Cleanup(func() { _ = rdb.Close() })
		return rdb
	}
	po := Production()
	po.Redis, po.Encryption = failover(), encConfig("")
	p := newClient(t, po)
	wo := Minimal()
	wo.Redis, wo.Encryption = failover(), encConfig("")
	w := newClient(t, wo)

	mustSet(t, w, "k", "v1")
	fillL1(t, p, "k", "v1")
	mustSet(t, w, "k", "v2")
	waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v2" })
	fillL1(t, p, "k", "v2")

	losses := p.InvalidationStats().Losses
	sen.Failover(t)
	waitWithin(t, 10*time.Second, func() bool { return p.InvalidationStats().Losses > losses })
	waitWithin(t, 10*time.Second, func() bool { return w.Set(bg, "k", "v3") == nil })
	waitWithin(t, 10*time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v3" })
	waitWithin(t, 10*time.Second, func() bool { return p.InvalidationStats().Tracking })
	fillL1(t, p, "k", "v3")
	mustSet(t, w, "k", "v4")
	waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v4" })
}

// A load that holds its lease across a Sentinel failover (the lease was
// replicated before it) still loses to a Delete made on the new master,
// and a waiter of another Client returns the value or loads itself: no
// stale value is stored, nothing waits past the lease.
func TestLeaseAcrossSentinelFailover(t *testing.T) {
	t.Parallel()
	sen := redistest.StartSentinel(t)
	client := func() (*Client, *redis.Client) {
		rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster, SentinelAddrs: sen.SentinelAddrs()})
		t.Cleanup(func() { _ = rdb.Close() })
		o := Production()
		o.Redis, o.Encryption, o.LeaseTTL = rdb, encConfig(""), 2*time.Second
		return newClient(t, o), rdb
	}
	a, ardb := client()
	b, brdb := client()
	// onMaster reports whether rdb's commands reach the master at addr.
	onMaster := func(rdb *redis.Client, addr string) bool {
		_, port, _ := strings.Cut(addr, ":")
		got, err := rdb.ConfigGet(bg, "port").Result()
		return err == nil && got["port"] == port
	}
	started, release := make(chan struct{}), make(chan struct{})
	r := async(func() error {
		v, err := GetOrLoadTTL(bg, a, "k", time.Minute, heldLoader("before failover", started, release))
		if err == nil && v != "before failover" {
			t.Errorf("the loading caller got %q", v)
		}
		return err
	})
	<-started
	sen.WaitReplicated(t) // the lease is on the replica
	old := sen.MasterAddr(t)
	sen.Failover(t)
	now := sen.WaitNewMaster(t, old, 20*time.Second)
	// Both Clients' connections have followed the failover before the
	// Delete and the store are sent (a write to the old master before it
	// is demoted is lost with it: the asynchronous-replication bound).
	waitWithin(t, 20*time.Second, func() bool { return onMaster(ardb, now) && onMaster(brdb, now) })
	if err := b.Delete(bg, "k"); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-r; err != nil {
		t.Fatal(err)
	}
	waitWithin(t, 10*time.Second, func() bool { _, err := Get[string](bg, b, "k"); return errors.Is(err, ErrNotFound) })
	if v, err := GetOrLoad(bg, b, "k", func(context.Context) (string, error) { return "after", nil }); err != nil || v != "after" {
		t.Fatalf("after the failover: %q, %v", v, err)
	}
}
