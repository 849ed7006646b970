package cachekit

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// TestFailOpenMGetReportsOutage: under FailOpen, an MGet during a Redis
// outage returns the values it could read (L1's) and an error that matches
// *MissError and ErrNotFound, as Get does, instead of a nil error that
// looks like misses.
func TestFailOpenMGetReportsOutage(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	opts := Production()
	opts.RedisURL = srv.URL()
	opts.Invalidation = nil // keep L1 through the outage
	c := newClient(t, opts)
	for _, k := range []string{"a", "b"} {
		mustSet(t, c, k, "v"+k)
	}
	srv.Stop()
	got, err := MGet[string](bg, c, []string{"a", "b", "c"})
	var me *MissError
	if !errors.As(err, &me) || !errors.Is(err, ErrNotFound) {
		t.Fatalf("MGet during an outage: err = %v, want a *MissError (matching ErrNotFound)", err)
	}
	if len(got) != 2 || got["a"] != "va" || got["b"] != "vb" {
		t.Fatalf("MGet during an outage returned %v, want the two L1 values", got)
	}
	// MGetOrLoad loads what the outage hid and reports no error.
	loaded, err := MGetOrLoad(bg, c, []string{"a", "c"}, func(_ context.Context, missing []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range missing {
			out[k] = "loaded"
		}
		return out, nil
	})
	if err != nil || loaded["a"] != "va" || loaded["c"] != "loaded" {
		t.Fatalf("MGetOrLoad during an outage = %v, %v", loaded, err)
	}
}

// TestFailOpenMGetClusterNodeDown: with one Cluster master hung, a FailOpen
// MGet returns every value the other masters hold and a *MissError for the
// keys of the hung one, with L1 off (MGET per slot) and on (the value and
// PTTL script per slot).
func TestFailOpenMGetClusterNodeDown(t *testing.T) {
	// Not parallel: pauses a node and must finish before the cluster
	// notices (cluster-node-timeout 1 s).
	cl := redistest.StartCluster(t, 3)
	clients := map[string]*Client{}
	for name, l1 := range map[string]int64{"l1-off": 0, "l1-on": 1 << 20} {
		opts := Production()
		opts.RedisURL = cl.URL()
		opts.L1MaxBytes = l1
		opts.Invalidation, opts.SWR = nil, nil
		clients[name] = newClient(t, opts)
	}
	var keys []string
	for i := range 30 {
		k := "node-down:" + strconv.Itoa(i)
		keys = append(keys, k)
		if err := clients["l1-off"].Set(bg, k, "v"+k); err != nil {
			t.Fatal(err)
		}
	}
	// A pooled connection to every master for the L1 client too.
	if _, err := MGet[string](bg, clients["l1-on"], keys); err != nil {
		t.Fatal(err)
	}
	clients["l1-on"].FlushLocal()
	down := cl.MasterOf(cl.Slot(t, keys[0]))
	onDown := map[string]bool{}
	for _, k := range keys {
		onDown[k] = cl.MasterOf(cl.Slot(t, k)) == down
	}
	for _, n := range cl.Nodes {
		if n.Addr() == down {
			n.Pause()
			defer n.Resume()
		}
	}
	type res struct {
		got map[string]string
		err error
	}
	results := map[string]chan res{}
	for name, c := range clients {
		ch := make(chan res, 1)
		results[name] = ch
		go func() {
			got, err := MGet[string](bg, c, keys)
			ch <- res{got, err}
		}()
	}
	for name, ch := range results {
		r := <-ch
		var me *MissError
		if !errors.As(r.err, &me) || !errors.Is(r.err, ErrNotFound) {
			t.Errorf("%s: MGet with a master down: err = %v, want a *MissError (matching ErrNotFound)", name, r.err)
		}
		for _, k := range keys {
			v, ok := r.got[k]
			switch {
			case onDown[k] && ok:
				t.Errorf("%s: a key of the hung master was returned", name)
			case !onDown[k] && v != "v"+k:
				t.Errorf("%s: a key of a live master: got %q (present %v), want its value", name, v, ok)
			}
		}
		t.Logf("%s: %d of %d keys returned with one of three masters hung", name, len(r.got), len(keys))
	}
}
