package nemesis

import (
	"context"
	"errors"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/cachekit-io/cachekit-go/internal/cacheaside"
)

const ms = int64(time.Millisecond)

// rec is a record of client c over [call, ret] ms: a write of v to key, or
// (reads non-nil) a read.
func rec(c int, kind, key string, v int, call, ret int64, err error) record {
	r := record{client: c, kind: kind, key: key, v: v, call: call * ms, ret: ret * ms, err: err}
	if !r.write() {
		r.reads, r.v = map[string]int{key: v}, 0
	}
	return r
}

var errLost = errors.New("timeout")

// The audit's reordered write as a history: client 0's Set of 1 times out
// (its bytes delayed), client 0 then Sets 2 and returns, and later reads
// see 1 again (the delayed bytes landed). With the fence's bound the check
// fails it; as porcupine would without the bound (a write that never
// returned may take effect at any time), it passes. A failed write of a
// client without a fence (the foreign writer) gets no bound; a failed Set
// may land late (a Ghost), a failed DEL brings no value back.
func TestSettleBoundsAnUnknownWrite(t *testing.T) {
	t.Parallel()
	h := history{end: 100 * ms, records: []record{
		rec(0, opSet, "k", 1, 0, 10, errLost),
		rec(0, opSet, "k", 2, 11, 12, nil),
		rec(1, opGet, "k", 2, 13, 14, nil),
		rec(1, opGet, "k", 1, 50, 51, nil),
		rec(-1, opForeignDel, "j", 3, 0, 10, errLost),
		rec(0, opDelete, "j", 4, 20, 21, nil),
	}}
	at, bound := settle(h, 0)
	if at != 12*ms || bound != 2 {
		t.Fatalf("settle = %d ms, bound %d; want 12 ms, bound 2 (client 0's next successful write)", at/ms, bound)
	}
	model := cacheaside.Model(0)
	if porcupine.CheckOperations(model, operations(h, true, nil)) {
		t.Fatal("the reordered write passes the check with the fence's bound")
	}
	if !porcupine.CheckOperations(model, operations(h, false, nil)) {
		t.Fatal("without the bound (no fence promised) the late landing must pass")
	}
	for _, op := range operations(h, true, nil) {
		in := op.Input.(cacheaside.Input)
		if in.Key == "j" && in.Unknown && (in.Bound != 0 || in.Ghost) {
			t.Fatalf("the foreign writer's failed DEL got bound %d, ghost %v; it has no fence, and a late DEL brings no value back", in.Bound, in.Ghost)
		}
		if in.Key == "k" && in.Unknown && !in.Ghost {
			t.Fatal("the failed Set is no Ghost: its late landing over another client's write would fail the check")
		}
	}
}

// plantStale replaces a read's value by one a definite write replaced
// more than δ before the read began, and the model rejects the result.
func TestPlantStaleIsRejected(t *testing.T) {
	t.Parallel()
	h := history{end: 100 * ms, records: []record{
		rec(0, opSet, "k", 1, 0, 1, nil),
		rec(0, opSet, "k", 2, 2, 3, nil),
		rec(1, opGetOrLoad, "k", 2, 20, 21, nil),
	}}
	ops := operations(h, true, nil)
	for _, delta := range []time.Duration{0, 10 * time.Millisecond} {
		stale, ok := plantStale(ops, delta)
		if !ok {
			t.Fatalf("δ %v: no stale read planted", delta)
		}
		if got := stale[2].Output; got != 1 {
			t.Fatalf("δ %v: planted %v, want 1 (the value the Set of 2 replaced)", delta, got)
		}
		if porcupine.CheckOperations(cacheaside.Model(delta), stale) {
			t.Fatalf("δ %v: the model accepts the planted stale read", delta)
		}
	}
	if _, ok := plantStale(ops, 20*time.Millisecond); ok {
		t.Fatal("planted a read that δ 20 ms allows")
	}
}

// A lost write's window makes the value it replaced readable again.
func TestLossWindowAllowsALostWrite(t *testing.T) {
	t.Parallel()
	base := time.Now()
	h := history{base: base, end: 100 * ms, records: []record{
		rec(0, opSet, "k", 1, 0, 1, nil),
		rec(0, opSet, "k", 2, 10, 11, nil),
		rec(1, opGet, "k", 1, 40, 41, nil),
	}}
	cfg := Config{LossWindow: 5 * time.Millisecond}
	failover := []Fault{{Kind: Failover, Start: base.Add(15 * time.Millisecond), End: base.Add(30 * time.Millisecond), Loses: true}}
	if v := check(cfg, h, nil); v.needed == 0 || v.lossy {
		t.Fatalf("without a failover: needed %v, lossy %v; want a failure", v.needed, v.lossy)
	}
	if v := check(cfg, h, failover); !v.lossy {
		t.Fatal("the Set of 2, acknowledged 4 ms before the failover, may be lost: want lossy")
	}
	late := []Fault{{Kind: Failover, Start: base.Add(20 * time.Millisecond), End: base.Add(30 * time.Millisecond), Loses: true}}
	if v := check(cfg, h, late); v.lossy {
		t.Fatal("the Set of 2, acknowledged 9 ms before the failover (window 5 ms), counted lossy")
	}
}

// memClient is a Client over a map, for the protocol test.
type memClient struct {
	mu sync.Mutex
	m  map[string]int
}

func (c *memClient) Get(_ context.Context, key string) (int, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok, nil
}

func (c *memClient) GetOrLoad(ctx context.Context, key string, load func(context.Context) (int, error)) (int, error) {
	if v, ok, _ := c.Get(ctx, key); ok {
		return v, nil
	}
	v, err := load(ctx)
	if err == nil {
		_ = c.Set(ctx, key, v)
	}
	return v, err
}

func (c *memClient) MGetOrLoad(ctx context.Context, keys []string, load func(context.Context, []string) (map[string]int, error)) (map[string]int, error) {
	return load(ctx, keys)
}

func (c *memClient) Set(_ context.Context, key string, v int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[key] = v
	return nil
}

func (c *memClient) Delete(_ context.Context, key string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if key == "fail" {
		return errors.New("l2: del: redis did not answer\nin time")
	}
	delete(c.m, key)
	return nil
}

func (c *memClient) SetIfAbsent(_ context.Context, key string, v int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; ok {
		return false, nil
	}
	c.m[key] = v
	return true, nil
}

// Every call crosses the wire protocol (Serve on one side, a Remote on
// the other, over pipes) with its result, its error and its loads.
func TestRemoteProtocol(t *testing.T) {
	t.Parallel()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- Serve(&memClient{m: map[string]int{}}, inR, outW, func() string { return "unfenced=0" })
		outW.Close()
	}()
	r := &Remote{in: inW, calls: map[string]*call{}, gone: make(chan struct{})}
	go r.read(outR)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	if _, found, err := r.Get(ctx, "a"); err != nil || found {
		t.Fatalf("Get of a missing key: found %v, %v", found, err)
	}
	v, err := r.GetOrLoad(ctx, "a", func(context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("GetOrLoad = %d, %v; want the parent's load, 7", v, err)
	}
	if v, found, err := r.Get(ctx, "a"); err != nil || !found || v != 7 {
		t.Fatalf("Get = %d, %v, %v", v, found, err)
	}
	m, err := r.MGetOrLoad(ctx, []string{"a", "b"}, func(_ context.Context, keys []string) (map[string]int, error) {
		if !slices.Equal(keys, []string{"a", "b"}) {
			t.Errorf("load of %v", keys)
		}
		return map[string]int{"a": 1, "b": 2}, nil
	})
	if err != nil || m["a"] != 1 || m["b"] != 2 {
		t.Fatalf("MGetOrLoad = %v, %v", m, err)
	}
	if stored, err := r.SetIfAbsent(ctx, "a", 9); err != nil || stored {
		t.Fatalf("SetIfAbsent over a value: %v, %v", stored, err)
	}
	if err := r.Set(ctx, "c", 3); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "c"); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "fail"); err == nil || err.Error() != "l2: del: redis did not answer in time" {
		t.Fatalf("a failed call's error = %v", err)
	}
	if st, err := r.Stats(ctx); err != nil || st != "unfenced=0" {
		t.Fatalf("Stats = %q, %v", st, err)
	}
	_ = inW.Close()
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

// TestSlot: the hash slots Redis's documentation gives for CLUSTER
// KEYSLOT (cachekit's cluster nemesis compares more with a live cluster).
func TestSlot(t *testing.T) {
	for key, want := range map[string]int{"somekey": 11058, "foo{hash_tag}": 2515, "{hash_tag}bar": 2515, "123456789": 12739} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

// On a cluster a fence covers one master: a failed write is bounded by
// its Client's next successful write of a key in its slot, not by one of
// a key another master may hold.
func TestSettleOnACluster(t *testing.T) {
	const ms = int64(time.Millisecond)
	a, b := "nm:1:0", "nm:1:1"
	if Slot(a) == Slot(b) {
		t.Fatal("the test needs two keys of two slots")
	}
	h := history{end: 100 * ms, records: []record{
		rec(0, opSet, a, 1, 0, 10, errLost),
		rec(0, opSet, b, 2, 11, 12, nil),
		rec(1, opSet, a, 3, 20, 21, nil),
	}}
	if at, bound := settle(h, 0); at != 12*ms || bound != 3 {
		t.Fatalf("one server: settle = %d ms, bound %d; want 12 ms, bound 3", at/ms, bound)
	}
	h.cluster = true
	if at, bound := settle(h, 0); at != h.end || bound != 0 {
		t.Fatalf("cluster: settle = %d ms, bound %d; want the end, no bound (the write of %s may be on another master)", at/ms, bound, b)
	}
}
