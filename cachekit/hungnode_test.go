package cachekit

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// tagsOn returns n hash tags ("{t17}") whose slots a master for which on
// reports true serves.
func tagsOn(t *testing.T, cl *redistest.Cluster, n int, on func(master string) bool) []string {
	t.Helper()
	var tags []string
	for i := 0; len(tags) < n; i++ {
		if i > 10000 {
			t.Fatal("no hash tag found on the wanted masters")
		}
		tag := fmt.Sprintf("{t%d}", i)
		if on(cl.MasterOf(cl.Slot(t, tag))) {
			tags = append(tags, tag)
		}
	}
	return tags
}

// nodeLoad counts a group's calls by phase.
type nodeLoad struct {
	ok, failed [3]atomic.Int64 // before, during, after the hang
	slowest    [3]atomic.Int64 // nanoseconds
}

// TestClusterHungMasterDelaysOnlyItsKeys: one master of a 3-master +
// 3-replica Cluster stops (SIGSTOP) for 2 s under load, 8 callers on the
// other masters' keys and 2 on its own. The healthy masters' keys see no
// failure and keep at least half their rate; the hung master's calls fail
// within the Client's bounds. With auto-pipelining on (the default) and
// off, on an injected cluster client and on one the Client opens from a
// redis+cluster:// URL (its streams' batches then have their own
// timeout). The node timeout is raised to 15 s (Redis's default) so that
// no replica takes over during the hang: a failover would make every
// master refuse commands while the slot has no master (CLUSTERDOWN),
// which no client can avoid.
func TestClusterHungMasterDelaysOnlyItsKeys(t *testing.T) {
	// Not parallel: measures rates.
	cl := redistest.StartClusterReplicas(t, 3, 1)
	cl.SetNodeTimeout(t, 15*time.Second)
	hung := cl.Masters()[0]
	healthyTags := tagsOn(t, cl, 16, func(m string) bool { return m != hung })
	hungTags := tagsOn(t, cl, 4, func(m string) bool { return m == hung })
	for _, mode := range []struct {
		name string
		off  bool
		url  bool // Options.RedisURL: the Client opens its own cluster client
	}{{"pipelined", false, false}, {"direct", true, false}, {"url", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			opts := Production()
			// Fail-open would turn a failed call into a miss or a dropped
			// write; off, every failure is an error the load counts.
			opts.Reliability.FailOpen = false
			if mode.url {
				opts.RedisURL = cl.URL()
			} else {
				opts.Redis = clusterClient(t, cl)
			}
			opts.DisableAutoPipeline = mode.off
			c := newClient(t, opts)
			key := func(tags []string) string {
				return fmt.Sprint(tags[rand.N(len(tags))], ":", rand.N(8))
			}
			for _, tag := range append(append([]string{}, healthyTags...), hungTags...) {
				for i := range 8 {
					mustSet(t, c, fmt.Sprint(tag, ":", i), "v")
				}
			}
			var phase atomic.Int32
			var stop atomic.Bool
			var wg sync.WaitGroup
			healthy, slow := &nodeLoad{}, &nodeLoad{}
			work := func(load *nodeLoad, tags []string) {
				defer wg.Done()
				for !stop.Load() {
					k := key(tags)
					p := phase.Load()
					start := time.Now()
					var err error
					if rand.N(2) == 0 {
						err = c.Set(bg, k, "v")
					} else {
						var got string
						got, err = Get[string](bg, c, k)
						if err == nil && got != "v" {
							err = fmt.Errorf("read %q", got)
						}
					}
					d := time.Since(start).Nanoseconds()
					for {
						old := load.slowest[p].Load()
						if d <= old || load.slowest[p].CompareAndSwap(old, d) {
							break
						}
					}
					if err != nil {
						load.failed[p].Add(1)
						if load == healthy && p == 1 && load.failed[p].Load() <= 3 {
							t.Logf("healthy key failed during the hang: %v", err)
						}
					} else {
						load.ok[p].Add(1)
					}
				}
			}
			for range 8 {
				wg.Add(1)
				go work(healthy, healthyTags)
			}
			for range 2 {
				wg.Add(1)
				go work(slow, hungTags)
			}
			time.Sleep(time.Second)
			phase.Store(1)
			cl.PauseNode(t, hung)
			time.Sleep(2 * time.Second)
			cl.ResumeNode(t, hung)
			phase.Store(2)
			time.Sleep(500 * time.Millisecond)
			stop.Store(true)
			wg.Wait()
			before := float64(healthy.ok[0].Load()) // per second
			during := float64(healthy.ok[1].Load()) / 2
			t.Logf("healthy keys: %.0f ok/s before, %.0f ok/s during the hang (%.0f%%), %d failed during; slowest %v",
				before, during, 100*during/before, healthy.failed[1].Load(), time.Duration(healthy.slowest[1].Load()))
			t.Logf("hung master's keys: %d ok, %d failed during the hang; slowest %v",
				slow.ok[1].Load(), slow.failed[1].Load(), time.Duration(slow.slowest[1].Load()))
			if n := healthy.failed[0].Load(); n > 0 {
				t.Fatalf("%d healthy calls failed before the hang", n)
			}
			if n := healthy.failed[1].Load(); n > 0 {
				t.Errorf("%d calls on the healthy masters' keys failed during the hang", n)
			}
			if during < before/2 {
				t.Errorf("healthy keys served %.0f/s during the hang, under half of %.0f/s before", during, before)
			}
			bound := opts.Reliability.OperationTimeout
			if bound == 0 {
				bound = guard.DefaultOperationTimeout
			}
			if d := time.Duration(slow.slowest[1].Load()); d > bound+500*time.Millisecond {
				t.Errorf("a call on the hung master's keys took %v, past OperationTimeout %v", d, bound)
			}
			if slow.failed[1].Load() == 0 {
				t.Error("no call on the hung master's keys failed: was it stopped?")
			}
			// The healthy masters' successes keep the shared breaker
			// closed (docs/production.md, "One breaker per Client").
			if st := c.ReliabilityStats(); st.BreakerOpened != 0 {
				t.Errorf("the breaker opened %d times with one master of three stopped", st.BreakerOpened)
			}
		})
	}
}
