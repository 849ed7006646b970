package l2

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestMGetOneRoundTrip(t *testing.T) {
	f := setup(t)
	vals := map[string][]byte{"a": []byte("A"), "c": allBytes(), "e": {}}
	for k, v := range vals {
		if err := f.store.Set(bg, k, v, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"a", "b", "c", "d", "e", "a"}
	f.hook.reset()
	got, err := f.store.MGet(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 1) // one pipeline: MGET and EXISTS of the keys
	if args := f.hook.lastArgs(); len(args) != 1+len(keys) || args[0] != "mget" {
		t.Fatalf("sent %d args starting %v, want MGET with %d keys first", len(args), args[0], len(keys))
	}
	if len(got) != len(keys) {
		t.Fatalf("%d results for %d keys", len(got), len(keys))
	}
	for i, k := range keys {
		want, present := vals[k]
		switch {
		case !present && got[i] != nil:
			t.Errorf("key %d: value for a missing key", i)
		case present && (got[i] == nil || !bytes.Equal(got[i], want)):
			t.Errorf("key %d: wrong value", i)
		}
	}
	if &got[0][0] == &got[5][0] {
		t.Fatal("duplicate keys share one slice")
	}
}

func TestMGetEmptyAndAllMissing(t *testing.T) {
	f := setup(t)
	f.hook.reset()
	got, err := f.store.MGet(bg, nil)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("MGet(nil) = %v, %v; want empty, nil", got, err)
	}
	f.hook.want(t, 0, 0)
	got, err = f.store.MGet(bg, []string{"x", "y"})
	if err != nil || len(got) != 2 || got[0] != nil || got[1] != nil {
		t.Fatalf("MGet(missing) = %v, %v", got, err)
	}
}

func TestMSetOneRoundTrip(t *testing.T) {
	f := setup(t)
	items := make([]Item, 20)
	for i := range items {
		items[i] = Item{
			Key:   "m:" + strconv.Itoa(i),
			Value: bytes.Repeat([]byte{byte(i)}, i),
			TTL:   time.Duration(i+1) * time.Minute,
		}
	}
	items = append(items, Item{Key: "m:0", Value: []byte("last wins"), TTL: time.Hour})
	f.hook.reset()
	if err := f.store.MSet(bg, items); err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 1)
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = items[i].Key
	}
	got, err := f.store.MGet(bg, keys)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 20; i++ {
		if !bytes.Equal(got[i], items[i].Value) {
			t.Fatalf("item %d: wrong value", i)
		}
		ttl, err := f.store.TTL(bg, items[i].Key)
		if err != nil || ttl > items[i].TTL || ttl < items[i].TTL-5*time.Second {
			t.Fatalf("item %d: TTL %v, %v; want about %v", i, ttl, err, items[i].TTL)
		}
	}
	if string(got[0]) != "last wins" {
		t.Fatal("items were not applied in order")
	}
	if ttl, _ := f.store.TTL(bg, "m:0"); ttl < 59*time.Minute {
		t.Fatalf("m:0 TTL %v, want the last item's hour", ttl)
	}

	f.hook.reset()
	if err := f.store.MSet(bg, nil); err != nil {
		t.Fatal(err)
	}
	f.hook.want(t, 0, 0)
}

func TestMSetFailureIsBackendError(t *testing.T) {
	f := setup(t)
	// A server out of memory, with eviction off, refuses writes (OOM).
	if err := f.rdb.Do(bg, "CONFIG", "SET", "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.rdb.Do(bg, "CONFIG", "SET", "maxmemory-policy", "noeviction").Err(); err != nil {
		t.Fatal(err)
	}
	err := f.store.MSet(bg, []Item{{Key: "secret:one", Value: []byte("v"), TTL: time.Minute}})
	if _, ok := asBackend(err); !ok || errors.Is(err, ErrNotFound) {
		t.Fatalf("MSet on a full server = %v, want *BackendError", err)
	}
	noKeyIn(t, err, "secret:one")
	if err := f.store.Set(bg, "secret:two", []byte("v"), time.Minute); err == nil {
		t.Fatal("Set on a full server succeeded")
	} else {
		noKeyIn(t, err, "secret:two")
	}
}

// TestMGetWrongType: a key holding another Redis type, which MGET reads as
// missing, is told apart from a missing key on every batch read and
// topology; the other values are still returned. Without a key of another
// type, no second round trip is sent.
func TestMGetWrongType(t *testing.T) {
	f := setup(t)
	cc := clusterNode(t)
	for name, rdb := range map[string]redis.UniversalClient{"standalone": f.rdb, "cluster": cc} {
		s := New(rdb)
		for _, k := range []string{"a", "{a}b", "c"} {
			if err := s.Set(bg, k, []byte("v-"+k), time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.RPush(bg, "list", "x").Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(bg, "{a}hash", "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		keys := []string{"a", "list", "missing", "{a}b", "{a}hash", "c"}
		check := func(method string, vals [][]byte, err error) {
			t.Helper()
			var wt *WrongTypeError
			if !errors.As(err, &wt) || !errors.Is(err, ErrWrongType) || !slices.Equal(wt.Index, []int{1, 4}) {
				t.Errorf("%s %s err = %v, want a *WrongTypeError naming 1 and 4", name, method, err)
				return
			}
			for i, k := range keys {
				want := ""
				if k == "a" || k == "{a}b" || k == "c" {
					want = "v-" + k
				}
				if string(vals[i]) != want || (want == "") != (vals[i] == nil) {
					t.Errorf("%s %s %s = %q, want %q", name, method, k, vals[i], want)
				}
			}
		}
		vals, err := s.MGet(bg, keys)
		check("MGet", vals, err)
		vals, _, err = s.MGetWithTTL(bg, keys)
		check("MGetWithTTL", vals, err)
		if strings.Contains(err.Error(), "list") || strings.Contains(err.Error(), "hash") {
			t.Errorf("error text names a key: %v", err)
		}

		h := &pipelineCounter{}
		rdb.AddHook(h)
		if _, err := s.MGet(bg, []string{"a", "missing", "c"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.MGetWithTTL(bg, []string{"a", "missing", "c"}); err != nil {
			t.Fatal(err)
		}
		if p := h.pipelines.Load(); p != 2 {
			t.Errorf("%s: MGet and MGetWithTTL with no key of another type sent %d pipelines, want 2", name, p)
		}
	}
}
