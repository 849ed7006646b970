package l2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// clusterStreamed starts a 3-master cluster and returns it with a Store
// on its auto-pipelined streams, its go-redis client, and hooks added to
// every node client (before any stream is made).
func clusterStreamed(t *testing.T, hooks ...redis.Hook) (*redistest.Cluster, *redis.ClusterClient, *Store) {
	t.Helper()
	cl := redistest.StartCluster(t, 3)
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), MaxRetries: -1,
		ContextTimeoutEnabled: true, ReadTimeout: 300 * time.Millisecond, WriteTimeout: 300 * time.Millisecond})
	t.Cleanup(func() { _ = rdb.Close() })
	rdb.OnNewNode(func(n *redis.Client) {
		for _, h := range hooks {
			n.AddHook(h)
		}
	})
	s := New(rdb)
	if err := s.AutoPipeline(0); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ForEachMaster(bg, func(ctx context.Context, c *redis.Client) error { return c.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	return cl, rdb, s
}

// keyOn returns a key whose slot master (per cl) satisfies on.
func keyOn(t *testing.T, cl *redistest.Cluster, prefix string, on func(master string) bool) string {
	t.Helper()
	for i := range 10000 {
		k := fmt.Sprint(prefix, i)
		if on(cl.MasterOf(slotOf(k))) {
			return k
		}
	}
	t.Fatal("no key found")
	return ""
}

// busyCluster keeps one call of s in flight on key's master (held by a
// Seam after its reply) until the test ends, so that later callers of
// that master go through its stream.
func busyCluster(t *testing.T, s *Store, key string) {
	t.Helper()
	h := redistest.NewHold("exists", key)
	seam.Install(s, h)
	done := make(chan struct{})
	go func() { defer close(done); _, _ = s.Exists(bg, key) }()
	<-h.Held()
	t.Cleanup(func() { h.Release(); <-done })
}

// TestClusterStreamHungMaster: with one master stopped, a call of the
// Store on another master's key answers at once while calls on the
// stopped master's keys wait in its stream (the cluster's shared stream
// held them all, healthy masters' commands included).
func TestClusterStreamHungMaster(t *testing.T) {
	t.Parallel()
	cl, _, s := clusterStreamed(t)
	hung := cl.Masters()[0]
	hk := keyOn(t, cl, "hung:", func(m string) bool { return m == hung })
	ok := keyOn(t, cl, "ok:", func(m string) bool { return m != hung })
	if err := s.Set(bg, ok, []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	cl.PauseNode(t, hung)
	defer cl.ResumeNode(t, hung)
	var wg sync.WaitGroup
	for range 4 { // keep the hung master's stream full
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(bg, time.Second)
			defer cancel()
			_ = s.Set(ctx, hk, []byte("x"), time.Minute)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
		start := time.Now()
		b, err := s.Get(ctx, ok)
		cancel()
		if err != nil || string(b) != "v" {
			t.Fatalf("Get %d of a healthy master's key with another master stopped: %q, %v after %v", i, b, err, time.Since(start))
		}
	}
	wg.Wait()
}

// TestClusterStreamFollowsRedirects: a slot moves between masters while
// the Store's streams are busy (ASK while keys migrate, MOVED after):
// every write lands, every read returns the last write of its key, and
// a caller's commands keep their order.
func TestClusterStreamFollowsRedirects(t *testing.T) {
	t.Parallel()
	sent := &sentCounter{}
	cl, _, s := clusterStreamed(t, sent)
	const tag = "{mv}"
	slot := slotOf(tag)
	from := cl.MasterOf(slot)
	to := cl.Masters()[0]
	if to == from {
		to = cl.Masters()[1]
	}
	busyCluster(t, s, tag+"busy")
	keys := make([]string, 40)
	for i := range keys {
		keys[i] = fmt.Sprint(tag, i)
		if err := s.Set(bg, keys[i], []byte("0"), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	var ops atomic.Int64
	base, asks := sent.n.Load(), sent.asking.Load()
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				k := keys[w*10+n%10] // each worker owns ten keys
				v := []byte(fmt.Sprint(w, ":", n))
				if err := s.Set(bg, k, v, time.Minute); err != nil {
					errs <- fmt.Errorf("Set: %w", err)
					return
				}
				got, err := s.Get(bg, k)
				if err != nil {
					errs <- fmt.Errorf("Get: %w", err)
					return
				}
				if string(got) != string(v) {
					errs <- fmt.Errorf("%s: read %q after writing %q", k, got, v)
					return
				}
				ops.Add(2)
			}
		}()
	}
	cl.BeginMigrate(t, slot, from, to)
	for cl.MigrateKeys(t, slot, from, to, 2) > 0 {
		time.Sleep(5 * time.Millisecond)
	}
	cl.FinishMigrate(t, slot, from, to)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// An operation ASK redirects costs its command, ASKING and the command
	// again (2 more); one MOVED redirects, the command again (1 more).
	cmds, asked := sent.n.Load()-base, sent.asking.Load()-asks
	extra := cmds - ops.Load()
	t.Logf("%d operations, %d commands sent to the masters (%.3f per operation): %d ASK redirects, %d extra commands beyond 2 per ASK",
		ops.Load(), cmds, float64(cmds)/float64(ops.Load()), asked, extra-2*asked)
}

// TestClusterStreamDropsAbandonedUnsent is TestStreamDropsAbandonedUnsent
// on a master's stream: a command whose caller stopped waiting while it
// was queued behind a stuck batch of its master is never sent; the
// commands behind it run, in order.
func TestClusterStreamDropsAbandonedUnsent(t *testing.T) {
	t.Parallel()
	stuck := redistest.NewHoldBefore("set", "{a}first") // holds the batch before it is sent
	defer stuck.Release()
	_, rdb, s := clusterStreamed(t, stuck)
	busyCluster(t, s, "{a}busy")
	ctx := bg
	first := make(chan error, 1)
	go func() { first <- s.Set(ctx, "{a}first", []byte("1"), time.Minute) }()
	<-stuck.Held()
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := s.Set(dctx, "{a}k", []byte("old"), time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set queued behind a stuck batch = %v, want DeadlineExceeded", err)
	}
	after := make(chan error, 1)
	go func() { after <- s.Set(ctx, "{a}after", []byte("2"), time.Minute) }()
	stuck.Release()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-after; err != nil {
		t.Fatal(err)
	}
	if err := s.settle(ctx, "{a}k"); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(bg, "{a}k").Result(); err != nil || n != 0 {
		t.Fatalf("EXISTS = %d, %v: the abandoned Set was sent after its caller gave up", n, err)
	}
	if b, err := rdb.Get(bg, "{a}after").Bytes(); err != nil || string(b) != "2" {
		t.Fatalf("the Set queued after it: %q, %v", b, err)
	}
}

// clusterFence is a Store with Fence and its per-master streams on a
// 3-master cluster whose masters each sit behind a proxy.
type clusterFence struct {
	store   *Store
	master  string // the master of key "k"
	proxies map[string]*redistest.Proxy
}

func newClusterFence(t *testing.T) *clusterFence {
	t.Helper()
	cl := redistest.StartCluster(t, 3)
	proxies := map[string]*redistest.Proxy{}
	for _, m := range cl.Masters() {
		proxies[m] = redistest.StartProxy(t, m)
	}
	var d net.Dialer
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), MaxRetries: -1, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p, ok := proxies[addr]; ok {
				addr = p.Addr()
			}
			return d.DialContext(ctx, network, addr)
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if err := s.Fence(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if err := s.AutoPipeline(0); err != nil {
		t.Fatal(err)
	}
	return &clusterFence{store: s, master: cl.MasterOf(slotOf("k")), proxies: proxies}
}

// delayedWrite runs write with the next connection to k's master delayed
// past its 150 ms deadline, and checks that its outcome is unknown.
func (f *clusterFence) delayedWrite(t *testing.T, write func(ctx context.Context) error) {
	t.Helper()
	f.proxies[f.master].DelayNext(600 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	err := write(ctx)
	cancel()
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a write whose bytes are delayed past its deadline = %v, want ErrOutcomeUnknown", err)
	}
}

func (f *clusterFence) storeOf() *Store { return f.store }

// heldK waits for the delayed bytes to go, then reads k on its master
// itself ("" when missing).
func (f *clusterFence) heldK(t *testing.T) string {
	t.Helper()
	testwait.For(t, 5*time.Second, func() bool { return f.proxies[f.master].Held() == 0 }, "the delayed requests to go")
	if n, err := redistest.Do(f.master, "EXISTS", "k"); err != nil || n == ":0" {
		return ""
	}
	v, err := redistest.DoBulk(f.master, "GET", "k")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestClusterFenceOrdersWrites is TestFenceOrdersWrites on a cluster's
// per-master streams (a busy stream, and a lone caller's direct send):
// a Set whose bytes k's master's proxy delays past its deadline does not
// land after the Store's next Set of k.
func TestClusterFenceOrdersWrites(t *testing.T) {
	t.Parallel()
	for _, busy := range []bool{true, false} {
		t.Run(fmt.Sprint("busy=", busy), func(t *testing.T) {
			t.Parallel()
			f := newClusterFence(t)
			if err := f.store.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if busy {
				busyCluster(t, f.store, "{k}busy")
			}
			f.delayedWrite(t, func(ctx context.Context) error { return f.store.Set(ctx, "k", []byte("old"), time.Minute) })
			if err := f.store.Set(bg, "k", []byte("new"), time.Minute); err != nil {
				t.Fatalf("the next Set: %v", err)
			}
			if got := f.heldK(t); got != "new" {
				t.Fatalf("the master holds %q after Set(old) timed out and Set(new) returned nil", got)
			}
			// On a busy stream the next Set queues behind the delayed one
			// on the same connection; a lone caller's goes on another
			// connection, after the fence.
			if st := f.store.FenceStats(); (!busy && st.Fenced < 1) || st.Unfenced != 0 {
				t.Fatalf("FenceStats %+v, want a fence and nothing unfenced", st)
			}
		})
	}
}

// TestClusterFenceCoversEveryWrite is TestFenceCoversEveryWrite on a
// cluster: Delete, MSet, SetCond, Expire and Set, each delayed past its
// deadline on the way to k's master, never land after the next write.
func TestClusterFenceCoversEveryWrite(t *testing.T) {
	t.Parallel()
	for _, tc := range fenceWriteCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.check(t, newClusterFence(t))
		})
	}
}

// sentCounter counts the commands a node client sends (not those that
// set a connection up), and among them ASKING.
type sentCounter struct{ n, asking atomic.Int64 }

func (h *sentCounter) count(cmd redis.Cmder) {
	h.n.Add(1)
	if cmd.Name() == "asking" {
		h.asking.Add(1)
	}
}

func (h *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}
func (h *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) == 0 || !connInit(cmds[0]) {
			for _, c := range cmds {
				h.count(c)
			}
		}
		return next(ctx, cmds)
	}
}

// TestClusterNeverResendsWrites: a cluster client resends a command that
// timed out up to MaxRedirects times (default 3) even with MaxRetries -1;
// a Set whose reply is held past the client's read timeout reaches its
// master once, on the stream and off it.
func TestClusterNeverResendsWrites(t *testing.T) {
	t.Parallel()
	for _, streamed := range []bool{false, true} {
		t.Run(fmt.Sprint("streamed=", streamed), func(t *testing.T) {
			t.Parallel()
			cl := redistest.StartCluster(t, 3)
			master := cl.MasterOf(slotOf("k"))
			proxy := redistest.StartProxy(t, master)
			var d net.Dialer
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Masters(), MaxRetries: -1, ContextTimeoutEnabled: true,
				ReadTimeout: 100 * time.Millisecond,
				Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
					if addr == master {
						addr = proxy.Addr()
					}
					return d.DialContext(ctx, network, addr)
				}})
			t.Cleanup(func() { _ = rdb.Close() })
			s := New(rdb)
			if streamed {
				if err := s.AutoPipeline(0); err != nil {
					t.Fatal(err)
				}
				busyCluster(t, s, "{k}busy")
			}
			if err := s.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
				t.Fatal(err)
			}
			before, _ := setCalls(t, master)
			proxy.DelayReplies(400 * time.Millisecond)
			ctx, cancel := context.WithTimeout(bg, 2*time.Second)
			err := s.Set(ctx, "k", []byte("v1"), time.Minute)
			cancel()
			proxy.DelayReplies(0)
			if err == nil {
				t.Fatal("a Set whose reply came after the read timeout returned nil")
			}
			time.Sleep(500 * time.Millisecond) // the held replies go
			if after, _ := setCalls(t, master); after-before != 1 {
				n := after - before
				t.Fatalf("the master ran the Set %d times, want once (%v)", n, err)
			}
		})
	}
}

// TestClusterMSetWaitsForAbandoned is TestStreamHonoursDeadline on a
// cluster, for a multi-key write: a Set abandoned while its batch is held
// still runs, and an MSet of the same key (sent off the stream) waits for
// its master's stream to run it, so the MSet's value is the one left.
func TestClusterMSetWaitsForAbandoned(t *testing.T) {
	t.Parallel()
	stuck := redistest.NewHoldBefore("set", "{m}k") // holds the batch before it is sent
	defer stuck.Release()
	_, rdb, s := clusterStreamed(t, stuck)
	busyCluster(t, s, "{m}busy")
	dctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if err := s.Set(dctx, "{m}k", []byte("old"), time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Set in a stuck stream = %v, want DeadlineExceeded", err)
	}
	<-stuck.Held()
	wrote := make(chan error, 1)
	go func() { wrote <- s.MSet(bg, []Item{{Key: "{m}k", Value: []byte("new"), TTL: time.Minute}}) }()
	select {
	case err := <-wrote:
		t.Fatalf("an MSet overtook an abandoned Set of its key: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	stuck.Release()
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if b, err := rdb.Get(bg, "{m}k").Bytes(); err != nil || string(b) != "new" {
		t.Fatalf("Redis holds %q, %v; want the later MSet's value", b, err)
	}
}
