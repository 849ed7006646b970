package l2

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// heard collects what a Tracker reports.
type heard struct {
	mu        sync.Mutex
	keys      map[string]int
	flushes   int
	ups, down int
}

func (h *heard) handler() TrackingHandler {
	return TrackingHandler{
		Invalidate: func(keys []string) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if keys == nil {
				h.flushes++
			}
			for _, k := range keys {
				h.keys[k]++
			}
		},
		Down: func(error) { h.mu.Lock(); h.down++; h.mu.Unlock() },
		Up:   func() { h.mu.Lock(); h.ups++; h.mu.Unlock() },
	}
}

// track starts a Tracker of rdb for prefix (closed at cleanup).
func track(t *testing.T, rdb redis.UniversalClient, prefix string, h TrackingHandler) *Tracker {
	t.Helper()
	tr, err := New(rdb).Track(prefix, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tr.Close() })
	return tr
}

// trackHeard starts a Tracker of rdb for prefix that reports to a new heard.
func trackHeard(t *testing.T, rdb redis.UniversalClient, prefix string) (*Tracker, *heard) {
	t.Helper()
	h := &heard{keys: map[string]int{}}
	return track(t, rdb, prefix, h.handler()), h
}

func (h *heard) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[key] > 0
}

// Every master of a 3-master cluster is tracked: a write to a key on any of
// them is reported, a key outside the prefix is not.
func TestTrackerCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	tr, h := trackHeard(t, rdb, "app:")
	select {
	case <-tr.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("tracking not ready")
	}
	nodes := map[string]bool{}
	for i := range 30 {
		key := fmt.Sprintf("app:k%d", i)
		if err := rdb.Set(bg, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "tracked", func() bool { return h.has(key) })
		addr, err := rdb.MasterForKey(bg, key)
		if err != nil {
			t.Fatal(err)
		}
		nodes[addr.Options().Addr] = true
	}
	if len(nodes) != 3 {
		t.Fatalf("keys covered %d masters, want 3", len(nodes))
	}
	if err := rdb.Set(bg, "other:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(bg, "app:last", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "tracked", func() bool { return h.has("app:last") })
	if h.has("other:k") {
		t.Fatal("a key outside the prefix was reported")
	}
}

// A killed node makes the Tracker go down; when it is back, up again.
func TestTrackerStandaloneLossAndReturn(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	tr, h := trackHeard(t, rdb, "")
	<-tr.Ready()
	srv.Kill()
	waitUntil(t, "tracked", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.down == 1 })
	srv.Restart()
	waitUntil(t, "tracked", func() bool { h.mu.Lock(); defer h.mu.Unlock(); return h.ups == 2 })
	if err := rdb.Set(bg, "x", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "tracked", func() bool { return h.has("x") })
}

// TestTrackerSettledOnRefusal: a Tracker whose node refuses the connection
// settles at once (so a caller waiting for it does not wait out a timer),
// without being Ready.
func TestTrackerSettledOnRefusal(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: unusedAddr(t)})
	t.Cleanup(func() { _ = rdb.Close() })
	tr := track(t, rdb, "", TrackingHandler{})
	start := time.Now()
	select {
	case <-tr.Settled():
	case <-time.After(2 * time.Second):
		t.Fatal("tracker not settled 2 s after its node refused the connection")
	}
	t.Logf("settled after %v", time.Since(start))
	select {
	case <-tr.Ready():
		t.Fatal("Ready closed although no node is tracked")
	default:
	}
}

// TestRefreshTopologyFollowsFailover: after a cluster master dies and a
// replica takes over, a cluster client that RefreshTopology is told about
// reaches the key's new master, where go-redis alone would keep dialing the
// dead one until its 60 s state reload.
func TestRefreshTopologyFollowsFailover(t *testing.T) {
	cl := redistest.StartClusterReplicas(t, 3, 1)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if err := s.Set(bg, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	cl.WaitReplicated(t)
	slot := cl.Slot(t, "k")
	old := cl.MasterOf(slot)
	cl.KillNode(t, old)
	cl.WaitMasterChange(t, slot, old, 10*time.Second)
	waitUntil(t, "read from the new master", func() bool {
		if _, err := s.Get(bg, "k"); err != nil {
			s.RefreshTopology()
			return false
		}
		return true
	})
	New(redis.NewClient(&redis.Options{Addr: unusedAddr(t)})).RefreshTopology() // a no-op off a cluster
}
