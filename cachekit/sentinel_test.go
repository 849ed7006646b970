package cachekit

import (
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

	if err := w.Set(bg, "k", "v1"); err != nil {
		t.Fatal(err)
	}
	fillL1(t, p, "k", "v1")
	if err := w.Set(bg, "k", "v2"); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v2" })
	fillL1(t, p, "k", "v2")

	losses := p.InvalidationStats().Losses
	sen.Failover(t)
	waitWithin(t, 10*time.Second, func() bool { return p.InvalidationStats().Losses > losses })
	waitWithin(t, 10*time.Second, func() bool { return w.Set(bg, "k", "v3") == nil })
	waitWithin(t, 10*time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v3" })
	waitWithin(t, 10*time.Second, func() bool { return p.InvalidationStats().Tracking })
	fillL1(t, p, "k", "v3")
	if err := w.Set(bg, "k", "v4"); err != nil {
		t.Fatal(err)
	}
	waitWithin(t, time.Second, func() bool { v, _ := Get[string](bg, p, "k"); return v == "v4" })
}
