package redistest

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// With three sentinels, a killed master is replaced by the sentinels'
// own agreement, and a failover client reads a value written before the
// kill from the new master.
func TestSentinelKillMaster(t *testing.T) {
	sen := StartSentinelN(t, 3)
	if n := len(sen.SentinelAddrs()); n != 3 {
		t.Fatalf("%d sentinels", n)
	}
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: sen.SentinelAddrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	setReplicated(t, rdb, "k", "before the kill")
	if err := rdb.Set(bg, "k2", "also before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	sen.WaitReplicated(t)
	if got := sen.MasterAddr(t); got != sen.Master.Addr() {
		t.Fatalf("MasterAddr = %s, want %s", got, sen.Master.Addr())
	}

	old := sen.KillMaster(t)
	start := time.Now()
	now := sen.WaitNewMaster(t, old, 15*time.Second)
	promoted := time.Since(start)
	getWithin(t, 15*time.Second-promoted, rdb, "k", "before the kill")
	t.Logf("master %s killed: sentinels agreed on %s after %v, the failover client read the key after %v",
		old, now, promoted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	getWithin(t, 2*time.Second, rdb, "k2", "also before")
	if now != sen.Replica.Addr() || sen.MasterAddr(t) != now {
		t.Fatalf("new master %s, MasterAddr %s, want the replica %s", now, sen.MasterAddr(t), sen.Replica.Addr())
	}
}

// The one-sentinel deployment still fails over on request.
func TestSentinelFailoverOnRequest(t *testing.T) {
	sen := StartSentinel(t)
	old := sen.MasterAddr(t)
	sen.Failover(t)
	if now := sen.WaitNewMaster(t, old, 10*time.Second); now != sen.Replica.Addr() {
		t.Fatalf("new master %s, want the replica %s", now, sen.Replica.Addr())
	}
}
