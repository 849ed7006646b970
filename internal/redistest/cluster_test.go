package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// clusterClient is a ClusterClient of cl. It reloads its slot map every
// second: go-redis reloads it on MOVED, ASK or READONLY, or else only when
// it is older than ClusterStateReloadInterval (default 60 s), and a dead
// master answers none of those, so by default the client would keep
// dialling it for up to a minute after a failover.
func clusterClient(t *testing.T, cl *Cluster) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ClusterStateReloadInterval: time.Second})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// getWithin polls GET key through rdb until it returns want.
func getWithin(t *testing.T, limit time.Duration, rdb redis.Cmdable, key, want string) {
	t.Helper()
	waitFor(t, limit, "GET "+key, func() bool {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		defer cancel()
		v, err := rdb.Get(ctx, key).Result()
		return err == nil && v == want
	})
}

// setReplicated writes key on its master and waits until one replica
// acknowledged the write (SET and WAIT on one connection).
func setReplicated(t *testing.T, master redis.Cmdable, key, val string) {
	t.Helper()
	var wait *redis.Cmd
	_, err := master.Pipelined(bg, func(p redis.Pipeliner) error {
		p.Set(bg, key, val, 0)
		wait = p.Do(bg, "WAIT", 1, 2000)
		return nil
	})
	if n, _ := wait.Int(); err != nil || n != 1 {
		t.Fatalf("SET %s + WAIT 1: %d replicas, %v", key, n, err)
	}
}

// A 3+3 cluster serves keys on every master; the master of a key's slot
// is killed and a replica takes over with the key.
func TestClusterReplicasFailover(t *testing.T) {
	cl := StartClusterReplicas(t, 3, 1)
	if len(cl.Addrs()) != 6 || len(cl.Masters()) != 3 {
		t.Fatalf("Addrs %v, Masters %v", cl.Addrs(), cl.Masters())
	}
	rdb := clusterClient(t, cl)
	owners := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		if err := rdb.Set(bg, key, key, 0).Err(); err != nil {
			t.Fatal(err)
		}
		getWithin(t, time.Second, rdb, key, key)
		owners[cl.MasterOf(cl.Slot(t, key))] = true
	}
	if len(owners) != 3 || !owners[cl.Masters()[0]] || !owners[cl.Masters()[1]] || !owners[cl.Masters()[2]] {
		t.Fatalf("keys owned by %v, want the 3 masters %v", owners, cl.Masters())
	}

	const key = "survivor"
	slot := cl.Slot(t, key)
	old := cl.MasterOf(slot)
	master, err := rdb.MasterForKey(bg, key)
	if err != nil || master.Options().Addr != old {
		t.Fatalf("MasterForKey: %v, %v, want %s", master, err, old)
	}
	setReplicated(t, master, key, "before the kill")
	cl.WaitReplicated(t) // and the 30 keys written above
	cl.KillNode(t, old)
	start := time.Now()
	now := cl.WaitMasterChange(t, slot, old, 10*time.Second)
	promoted := time.Since(start)
	getWithin(t, 10*time.Second-promoted, rdb, key, "before the kill")
	t.Logf("master %s of slot %d killed: %s took over after %v, ClusterClient read the key after %v",
		old, slot, now, promoted.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if now == old || cl.MasterOf(slot) != now {
		t.Fatalf("new master %s, MasterOf %s, old %s", now, cl.MasterOf(slot), old)
	}
	for i := range 30 {
		key := fmt.Sprintf("k%d", i)
		getWithin(t, 2*time.Second, rdb, key, key)
	}
}

// A slot moved in steps stays readable through a ClusterClient: ASK while
// half moved, MOVED once done.
func TestClusterMigrateSlot(t *testing.T) {
	cl := StartClusterReplicas(t, 3, 1)
	rdb := clusterClient(t, cl)
	keys := []string{"{m}a", "{m}b", "{m}c"}
	for _, k := range keys {
		if err := rdb.Set(bg, k, "v"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot := cl.Slot(t, keys[0])
	from := cl.MasterOf(slot)
	to := cl.Masters()[0]
	if to == from {
		to = cl.Masters()[1]
	}

	cl.BeginMigrate(t, slot, from, to)
	if n := cl.MigrateKeys(t, slot, from, to, 1); n != 1 {
		t.Fatalf("MigrateKeys moved %d, want 1", n)
	}
	asked := 0
	for _, k := range keys {
		if r, _ := Do(from, "GET", k); strings.HasPrefix(r, "-ASK ") {
			asked++
		}
		getWithin(t, 2*time.Second, rdb, k, "v"+k)
	}
	if asked != 1 {
		t.Fatalf("%d keys answered with -ASK mid-migration, want 1", asked)
	}

	for cl.MigrateKeys(t, slot, from, to, 100) > 0 {
	}
	cl.FinishMigrate(t, slot, from, to)
	if r, _ := Do(from, "GET", keys[0]); !strings.HasPrefix(r, "-MOVED ") {
		t.Fatalf("old owner answers %q, want -MOVED", r)
	}
	if cl.MasterOf(slot) != to {
		t.Fatalf("MasterOf = %s, want %s", cl.MasterOf(slot), to)
	}
	for _, k := range keys {
		getWithin(t, 2*time.Second, rdb, k, "v"+k)
	}

	cl.MigrateSlot(t, slot, to, from) // and back in one call
	for _, k := range keys {
		getWithin(t, 2*time.Second, rdb, k, "v"+k)
	}
	if cl.MasterOf(slot) != from {
		t.Fatalf("MasterOf = %s after moving back, want %s", cl.MasterOf(slot), from)
	}
}

// StartCluster is a cluster of masters only, slots split in order.
func TestClusterMastersOnly(t *testing.T) {
	cl := StartCluster(t, 3)
	if len(cl.Nodes) != 3 || len(cl.Masters()) != 3 {
		t.Fatalf("%d nodes, masters %v", len(cl.Nodes), cl.Masters())
	}
	for i, slot := range []int{0, clusterSlots / 2, clusterSlots - 1} {
		if got, want := cl.MasterOf(slot), cl.Addrs()[i]; got != want {
			t.Fatalf("MasterOf(%d) = %s, want %s", slot, got, want)
		}
	}
}
