package l2

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestScanEveryMaster: Scan finds exactly the matching keys on every
// master of a three-master cluster, and on a standalone server. The cluster
// client is the one Open builds from a redis+cluster:// URL.
func TestScanEveryMaster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	crdb, err := Open(cl.URL(), time.Second, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := crdb.(*redis.ClusterClient); !ok {
		t.Fatalf("Open(redis+cluster://) = %T, want *redis.ClusterClient", crdb)
	}
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
	_ = rdb.Del(bg, "k:1") // k:1 becomes a list meanwhile
	if err := rdb.RPush(bg, "k:1", "now a list").Err(); err != nil {
		t.Fatal(err)
	}
	done, errs := s.SwapMany(bg, "", items)
	for i, err := range errs {
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	for i, ok := range done {
		if i == 1 {
			if ok {
				t.Fatal("a key that became a list was swapped")
			}
			continue
		}
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

// TestScanStopsAndNodeReads: an error from fn stops the walk on every
// master (fn is called once); ReadRaw and Unlink work against one node of
// a cluster for keys of many slots (single-key commands, no CROSSSLOT).
func TestScanStopsAndNodeReads(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	crdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs()})
	t.Cleanup(func() { _ = crdb.Close() })
	cs := New(crdb)
	for i := range 300 {
		if err := cs.Set(bg, fmt.Sprintf("u:%d", i), []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	calls := 0
	stop := fmt.Errorf("stop")
	if err := cs.Scan(bg, "u:*", 10, func([]string) error { calls++; return stop }); err != stop || calls != 1 {
		t.Fatalf("Scan = %v after %d calls; want stop after 1", err, calls)
	}
	if err := cs.ScanFrom(bg, "", "u:*", 10, 42, func([]string, uint64) error { return nil }); err == nil {
		t.Fatal("ScanFrom with a cursor on a cluster client did not refuse")
	}
	node := redis.NewClient(&redis.Options{Addr: cl.Addrs()[0]})
	t.Cleanup(func() { _ = node.Close() })
	ns := New(node)
	var keys []string
	if err := ns.Scan(bg, "u:*", 500, func(k []string) error { keys = append(keys, k...); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) == 0 || len(keys) == 300 {
		t.Fatalf("one node of three holds %d of 300 keys", len(keys))
	}
	vals, ttls, other, err := ns.readRaw(bg, keys)
	if err != nil {
		t.Fatalf("ReadRaw on one node: %v", err)
	}
	for i := range keys {
		if string(vals[i]) != "v" || ttls[i] <= 0 || other[i] {
			t.Fatalf("%s: %q %v %v", keys[i], vals[i], ttls[i], other[i])
		}
	}
	if n, err := ns.unlink(bg, keys...); err != nil || n != int64(len(keys)) {
		t.Fatalf("Unlink on one node = %d, %v; want %d", n, err, len(keys))
	}
}

// TestScanFromPrefixIsLiteral: a prefix holding SCAN's pattern syntax
// matches only itself, and only keys under it reach fn.
func TestScanFromPrefixIsLiteral(t *testing.T) {
	f := setup(t)
	for _, k := range []string{`a*[\x`, `a*[\y`, "abx", `a*x`, "other", "\xff*q", "\xffzq"} {
		if err := f.store.Set(bg, k, []byte("v"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := f.store.ScanFrom(bg, `a*[\`, "*", 100, 0, func(keys []string, _ uint64) error {
		got = append(got, keys...)
		return nil
	})
	sort.Strings(got)
	if err != nil || fmt.Sprint(got) != `[a*[\x a*[\y]` {
		t.Fatalf("ScanFrom = %q, %v", got, err)
	}
	got = nil
	err = f.store.ScanFrom(bg, "\xff*", "*", 100, 0, func(keys []string, _ uint64) error {
		got = append(got, keys...)
		return nil
	})
	if err != nil || fmt.Sprint(got) != "[\xff*q]" { // not UTF-8, and literal
		t.Fatalf("ScanFrom = %q, %v", got, err)
	}
}

// TestScanEntriesAndUnlinkMatching: ScanEntries hands over the entries
// under a prefix with the prefix cut, their bytes and TTLs, a key of
// another type with nil bytes and no lease placeholder as an entry;
// UnlinkMatching deletes what matches, reports each batch's keys without
// the prefix and counts what Redis deleted.
func TestScanEntriesAndUnlinkMatching(t *testing.T) {
	f := setup(t)
	if err := f.store.Set(bg, "p:a", []byte("va"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.RPush(bg, "p:list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Set(bg, "p:leased", NewLease(), time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Set(bg, "q:b", []byte("vb"), time.Minute); err != nil {
		t.Fatal(err)
	}
	got := map[string]Entry{}
	err := f.store.ScanEntries(bg, "p:", "*", 100, 0, func(batch []Entry, _ uint64) error {
		for _, e := range batch {
			got[e.Key] = e
		}
		return nil
	})
	if err != nil || len(got) != 2 || string(got["a"].Stored) != "va" || got["a"].TTL <= 0 ||
		got["list"].Stored != nil || got["list"].Key != "list" {
		t.Fatalf("ScanEntries = %+v, %v", got, err)
	}
	var unlinked []string
	n, err := f.store.UnlinkMatching(bg, "p:", "*", 100, func(keys []string) { unlinked = append(unlinked, keys...) })
	sort.Strings(unlinked)
	if err != nil || n != 3 || fmt.Sprint(unlinked) != "[a leased list]" {
		t.Fatalf("UnlinkMatching = %d %q, %v", n, unlinked, err)
	}
	if ok, _ := f.store.Exists(bg, "q:b"); !ok {
		t.Fatal("UnlinkMatching deleted a key outside its prefix")
	}
}
