package cachekit

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// topologyFault runs a topology fault under load against mode's preset
// Client on a client() of the topology (and a raw one beside it): it writes
// the pre-fault keys, waits for their replication and for traffic, runs
// kill (which returns the key to probe for recovery), waits until that key
// is served from Redis again within recoverTopology, and checks the load's
// result (what, lost keys, degraded calls, latencies). It returns the
// Client.
func topologyFault(t *testing.T, mode, what string, client func() redis.UniversalClient, replicated func(testing.TB), kill func() (probe string)) *Client {
	t.Helper()
	opts := presetFor(t, mode)
	opts.Redis = client()
	raw := client()
	c := newClient(t, opts)
	writePre(t, c, preKeys)
	replicated(t)
	load := startLoad(c, 4, nil)
	load.await(t, preTraffic, "traffic before the fault")
	degraded := c.ReliabilityStats().Degraded
	load.setPhase("during")
	probe := kill()
	killed := time.Now()
	rec := recoverWithin(t, c, raw, probe, recoverTopology)
	load.setPhase("after")
	res := load.result(mode + ": " + what)
	res.Degraded = c.ReliabilityStats().Degraded - degraded
	res.Recover = time.Since(killed)
	load.halt()
	t.Logf("served from Redis %v after the kill (probe loop %v)", res.Recover, rec)
	res.Total = preKeys
	res.Lost = checkPre(t, c, preKeys)
	checkFault(t, res, load, false)
	return c
}

// recoverTopology is the acceptance bound for a Cluster master kill and a
// Sentinel failover.
const recoverTopology = 10 * time.Second

// boundedClient returns injected-client settings as docs/production.md
// recommends: deadlines honoured, no go-redis retries, timeouts within
// AttemptTimeout.
const boundedTimeout = 200 * time.Millisecond

func presetFor(t *testing.T, mode string) Options {
	t.Helper()
	if mode == "secure" {
		o, err := Secure(strings.Repeat("42", 32))
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	return Production()
}

// clusterClient and failoverClient build go-redis clients as
// docs/production.md recommends for injected clients: deadlines honoured,
// no go-redis retries, timeouts within AttemptTimeout; closed with t.
func clusterClient(t *testing.T, cl *redistest.Cluster) *redis.ClusterClient {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), ContextTimeoutEnabled: true,
		MaxRetries: -1, DialTimeout: boundedTimeout, ReadTimeout: boundedTimeout, WriteTimeout: boundedTimeout})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func failoverClient(t *testing.T, sen *redistest.Sentinel) *redis.Client {
	rdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: redistest.SentinelMaster,
		SentinelAddrs: sen.SentinelAddrs(), ContextTimeoutEnabled: true, MaxRetries: -1,
		DialTimeout: boundedTimeout, ReadTimeout: boundedTimeout, WriteTimeout: boundedTimeout})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// TestFaultsClusterMasterKill: a 3-master + 3-replica Cluster loses the
// master of a slot under load; a replica takes over and the Client serves
// that slot from Redis again within 10 s.
func TestFaultsClusterMasterKill(t *testing.T) {
	// Not parallel: bounds call latencies and counts the goroutines left after Close.
	for _, mode := range []string{"production", "secure"} {
		t.Run(mode, func(t *testing.T) {
			cl := redistest.StartClusterReplicas(t, 3, 1)
			c := topologyFault(t, mode, "cluster master kill", func() redis.UniversalClient { return clusterClient(t, cl) }, cl.WaitReplicated,
				func() string {
					cl.KillNode(t, cl.MasterOf(cl.Slot(t, "pre:0")))
					// The probe key shares pre:0's slot: it is served by the
					// killed master until a replica takes over.
					return "{pre:0}:probe"
				})
			noGoroutinesAfterClose(t, c)
		})
	}
}

// TestFaultsClusterReshard: a slot moves between masters under load
// (MIGRATING/IMPORTING, keys moved in batches, then the slot reassigned):
// the Client follows ASK and MOVED with no wrong value and nothing lost.
func TestFaultsClusterReshard(t *testing.T) {
	// Not parallel: bounds call latencies and counts the goroutines left after Close.
	cl := redistest.StartClusterReplicas(t, 3, 1)
	opts := Production()
	opts.Redis = clusterClient(t, cl)
	raw := clusterClient(t, cl)
	c := newClient(t, opts)
	// Every key of the load and of the pre-fault set lives in one slot.
	const tag = "{mig}"
	for i := range preKeys {
		mustSet(t, c, fmt.Sprint(tag, "pre:", i), fmt.Sprint(tag, "pre:", i, "|0"))
	}
	load := startLoad(c, 4, func(i int) string { return fmt.Sprint(tag, "load:", i) })
	load.await(t, preTraffic, "traffic before the reshard")
	load.setPhase("during")
	slot := cl.Slot(t, tag)
	from := cl.MasterOf(slot)
	to := cl.Masters()[0]
	if to == from {
		to = cl.Masters()[1]
	}
	start := time.Now()
	cl.BeginMigrate(t, slot, from, to)
	for cl.MigrateKeys(t, slot, from, to, 2) > 0 {
		load.await(t, 20, "load calls in the ASK window") // let the load hit the ASK window
	}
	cl.FinishMigrate(t, slot, from, to)
	moved := time.Since(start)
	rec := recoverWithin(t, c, raw, tag+"probe", recoverTopology)
	load.setPhase("after")
	load.halt()
	res := load.result("production: cluster slot reshard")
	res.Recover = rec
	res.Total = preKeys
	for i := range preKeys {
		k := fmt.Sprint(tag, "pre:", i)
		got, err := Get[string](bg, c, k)
		if err != nil {
			res.Lost++
			continue
		}
		if got != k+"|0" {
			t.Fatalf("%s reads %q after the reshard", k, got)
		}
	}
	t.Logf("slot %d moved in %v", slot, moved)
	checkFault(t, res, load, false)
	if owner := cl.MasterOf(slot); owner != to {
		t.Fatalf("slot %d owned by %s after the move, want %s", slot, owner, to)
	}
	noGoroutinesAfterClose(t, c)
}

// TestFaultsSentinelFailover: the master behind three Sentinels is killed
// under load; the Sentinels agree on a new master and the Client serves
// from Redis again within 10 s with nothing replicated lost.
func TestFaultsSentinelFailover(t *testing.T) {
	// Not parallel: bounds call latencies and counts the goroutines left after Close.
	for _, mode := range []string{"production", "secure"} {
		t.Run(mode, func(t *testing.T) {
			sen := redistest.StartSentinelN(t, 3)
			c := topologyFault(t, mode, "sentinel master kill", func() redis.UniversalClient { return failoverClient(t, sen) }, sen.WaitReplicated,
				func() string { sen.KillMaster(t); return "probe" })
			t.Logf("new master %s", sen.MasterAddr(t))
			noGoroutinesAfterClose(t, c)
		})
	}
}
