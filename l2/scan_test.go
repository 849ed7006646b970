package l2

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestScanEveryMaster: Scan finds exactly the matching keys on every
// master of a three-master cluster, and on a standalone server.
func TestScanEveryMaster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	crdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = crdb.Close() })
	srv := redistest.Start(t)
	srdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = srdb.Close() })
	for name, rdb := range map[string]redis.UniversalClient{"cluster": crdb, "standalone": srdb} {
		t.Run(name, func(t *testing.T) {
			s := New(rdb)
			var want []string
			for i := range 300 {
				k := fmt.Sprintf("user:%d", i)
				want = append(want, k)
				if err := s.Set(bg, k, []byte("v"), time.Minute); err != nil {
					t.Fatal(err)
				}
				if err := s.Set(bg, fmt.Sprintf("order:%d", i), []byte("v"), time.Minute); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			if err := s.Scan(bg, "user:*", 50, func(keys []string) error {
				got = append(got, keys...)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			slices.Sort(got)
			got = slices.Compact(got) // SCAN may return a key twice
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("Scan found %d keys, want the %d user:* keys", len(got), len(want))
			}
		})
	}
}

// TestSwapManyCluster: SwapMany's compare-and-set works across the slots
// and masters of a cluster (the script is loaded on every master).
func TestSwapManyCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	var items []Swap
	for i := range 60 {
		k := fmt.Sprintf("k:%d", i)
		if err := s.Set(bg, k, []byte("old"), time.Hour); err != nil {
			t.Fatal(err)
		}
		old := []byte("old")
		if i%3 == 0 {
			old = []byte("stale") // these must not be swapped
		}
		items = append(items, Swap{Key: k, Old: old, New: []byte("new")})
	}
	done, err := s.SwapMany(bg, items)
	if err != nil {
		t.Fatal(err)
	}
	for i, ok := range done {
		want := i%3 != 0
		got, _ := s.Get(bg, items[i].Key)
		if ok != want || (string(got) == "new") != want {
			t.Fatalf("%s: swapped %v, value %q; want swapped %v", items[i].Key, ok, got, want)
		}
		if d, _ := s.TTL(bg, items[i].Key); d < 59*time.Minute {
			t.Fatalf("%s lost its TTL: %v", items[i].Key, d)
		}
	}
}
