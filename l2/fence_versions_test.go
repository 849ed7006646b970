package l2

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
	"github.com/redis/go-redis/v9"
)

// The replies Redis 6.0.16 gives to the two CLIENT subcommands 6.2 added,
// word for word.
const (
	redis60Info = "-ERR Unknown subcommand or wrong number of arguments for 'info'. Try CLIENT HELP"
	redis60List = "-ERR syntax error"
)

// reorder runs the audit's reordered write once: a Set whose request the
// proxy delays past its 150 ms deadline, then the next Set, bounded by
// within, which must return nil; once the delayed bytes have gone Redis
// must hold the next Set's value.
func (f *fenceFixture) reorder(t *testing.T, round int, within time.Duration) {
	t.Helper()
	if err := f.store.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
		t.Fatalf("round %d: %v", round, err)
	}
	f.delayedWrite(t, func(ctx context.Context) error { return f.store.Set(ctx, "k", []byte("old"), time.Minute) })
	ctx, cancel := context.WithTimeout(bg, within)
	err := f.store.Set(ctx, "k", []byte("new"), time.Minute)
	cancel()
	if err != nil {
		t.Fatalf("round %d: the next Set within %v: %v (FenceStats %+v)", round, within, err, f.store.FenceStats())
	}
	f.settle(t)
	if got := f.direct(t, "k"); got != "new" {
		t.Fatalf("round %d: Redis holds %q after Set(old) timed out and Set(new) returned nil: the delayed write landed last (FenceStats %+v)",
			round, got, f.store.FenceStats())
	}
}

// TestFenceOnRedis60: a server that answers CLIENT INFO and CLIENT LIST
// ID as Redis 6.0 does (the proxy gives its replies) is fenced through
// CLIENT ID and the whole CLIENT LIST: 10 reordered writes, 0 older
// values, and the next write served within 1 s each time. Before, the
// kill took "ERR syntax error" for a server not answering and tried
// again forever: every later command waited at the gate.
func TestFenceOnRedis60(t *testing.T) {
	f := newFenceFixture(t, true, nil)
	f.proxy.Answer(redis60Info, "client", "info")
	f.proxy.Answer(redis60List, "client", "list", "id")
	for round := range 10 {
		f.reorder(t, round, time.Second)
	}
	if st := f.store.FenceStats(); st.Fenced < 10 || st.Unfenced != 0 || !st.On {
		t.Fatalf("FenceStats %+v, want 10 fences and nothing unfenced", st)
	}
	if f.proxy.Answered() < 20 {
		t.Fatalf("the proxy answered %d of the 6.2 commands: the 6.0 path was not taken", f.proxy.Answered())
	}
}

// TestFenceEndsOnAnyReply: a server that answers CLIENT KILL itself with
// an error it is no refusal (here the proxy's "ERR syntax error") ends
// the fence at once, counted Refused: the next write goes within 1 s, and
// every write after it too.
func TestFenceEndsOnAnyReply(t *testing.T) {
	f := newFenceFixture(t, true, nil)
	f.proxy.Answer(redis60Info, "client", "info")
	f.proxy.Answer(redis60List, "client", "list")
	f.proxy.Answer(redis60List, "client", "kill")
	if err := f.store.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	f.delayedWrite(t, func(ctx context.Context) error { return f.store.Set(ctx, "k", []byte("old"), time.Minute) })
	for i := range 5 {
		ctx, cancel := context.WithTimeout(bg, time.Second)
		err := f.store.Set(ctx, "k", []byte("new"), time.Minute)
		cancel()
		if err != nil {
			t.Fatalf("Set #%d after a kill answered with an error: %v (FenceStats %+v)", i, err, f.store.FenceStats())
		}
	}
	if st := f.store.FenceStats(); st.Refused != 1 || st.Unfenced != 1 || st.On {
		t.Fatalf("FenceStats %+v, want one connection refused and On false", st)
	}
}

// TestFencePreDialed: a client pinged before the Store fences it (the
// usual start-up check; MinIdleConns dials too) has its idle connections
// retired, so the reordered write is fenced on every one: 10 rounds, 0
// older values. Before, a connection dialed before Fence was never
// watched, and the delayed write landed last.
func TestFencePreDialed(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts redis.Options
	}{
		{"pinged", redis.Options{}},
		{"MinIdleConns", redis.Options{MinIdleConns: 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.Start(t)
			p := redistest.StartProxy(t, srv.Addr())
			opts := tc.opts
			opts.Addr, opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled = p.Addr(), -1, 1, true
			rdb := redis.NewClient(&opts)
			t.Cleanup(func() { _ = rdb.Close() })
			for range 3 {
				if err := rdb.Ping(bg).Err(); err != nil {
					t.Fatal(err)
				}
			}
			testwait.For(t, 2*time.Second, func() bool { return int(rdb.PoolStats().IdleConns) >= max(1, opts.MinIdleConns) },
				"the pre-dialed connections")
			s := fencedPreDialed(t, rdb)
			f := &fenceFixture{srv: srv, proxy: p, rdb: rdb, store: s}
			for round := range 10 {
				f.reorder(t, round, time.Second)
			}
			if st := s.FenceStats(); st.Fenced < 10 || st.Unfenced != 0 {
				t.Fatalf("FenceStats %+v, want 10 fences", st)
			}
		})
	}
}

// TestFencePreDialedCluster: a ClusterClient pinged on every node before
// the Store fences it: the nodes it made before are hooked (ForEachShard)
// and their idle connections retired, so a delayed write to any master is
// fenced. Each master is reached through a proxy of its own (the client's
// Dialer maps the address), which delays the write.
func TestFencePreDialedCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	proxies := map[string]*redistest.Proxy{}
	for _, addr := range cl.Masters() {
		proxies[addr] = redistest.StartProxy(t, addr)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: cl.Masters()[:1], MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if p := proxies[addr]; p != nil {
				addr = p.Addr()
			}
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	})
	t.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.ForEachMaster(bg, func(ctx context.Context, n *redis.Client) error { return n.Ping(ctx).Err() }); err != nil {
		t.Fatal(err)
	}
	s := fencedPreDialed(t, rdb)
	for round := range 10 {
		key := []string{"a", "b", "c", "d", "e"}[round%5]
		p := proxies[cl.MasterOf(cl.Slot(t, key))]
		if err := s.Set(bg, key, []byte("v0"), time.Minute); err != nil {
			t.Fatal(err)
		}
		p.DelayNext(600 * time.Millisecond)
		ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		err := s.Set(ctx, key, []byte("old"), time.Minute)
		cancel()
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("round %d: the delayed Set = %v, want ErrOutcomeUnknown", round, err)
		}
		ctx, cancel = context.WithTimeout(bg, time.Second)
		err = s.Set(ctx, key, []byte("new"), time.Minute)
		cancel()
		if err != nil {
			t.Fatalf("round %d: the next Set: %v", round, err)
		}
		testwait.For(t, 5*time.Second, func() bool { return p.Held() == 0 }, "the delayed requests to go")
		if got, err := redistest.DoBulk(cl.MasterOf(cl.Slot(t, key)), "GET", key); err != nil || got != "new" {
			t.Fatalf("round %d: Redis holds %q, %v: the delayed write landed last (FenceStats %+v)", round, got, err, s.FenceStats())
		}
	}
	if st := s.FenceStats(); st.Fenced < 10 || st.Unfenced != 0 {
		t.Fatalf("FenceStats %+v, want 10 fences", st)
	}
}

// fencedPreDialed returns a fenced Store on rdb, a client used before,
// after checking that Fence retired every pre-dialed connection.
func fencedPreDialed(t *testing.T, rdb redis.UniversalClient) *Store {
	t.Helper()
	s := New(rdb)
	if err := s.Fence(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if st := s.FenceStats(); st.PreDialed != 0 || !st.On {
		t.Fatalf("FenceStats %+v after Fence retired the idle connections", st)
	}
	return s
}

// TestFenceDialsDuringOutage: 16 connections fail at once and the server
// stays down for 4 s while writes keep coming to wait at the gate: the
// kills share one loop, whose killer dials at most 17 times a second (the
// acceptance: 20)
// (before, a loop per connection dialed a killer per try, 10 ms apart
// while a write waited: about 1,400 a second).
func TestFenceDialsDuringOutage(t *testing.T) {
	f := newFenceFixture(t, true, &redis.Options{PoolSize: 16})
	// 16 greeted connections: 16 blocking reads at once.
	warm := make(chan error, 16)
	for range 16 {
		go func() { warm <- f.rdb.Do(bg, "blpop", "nolist", "0.2").Err() }()
	}
	for range 16 {
		if err := <-warm; err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	if n := f.rdb.PoolStats().IdleConns; n < 16 {
		t.Fatalf("%d idle connections, want 16", n)
	}
	// Each takes one and fails with its request in flight.
	f.proxy.BlackHole()
	failed := make(chan error, 16)
	for range 16 {
		go func() {
			ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
			defer cancel()
			failed <- f.rdb.Do(ctx, "blpop", "nolist", "0.1").Err()
		}()
	}
	for range 16 {
		if err := <-failed; err == nil {
			t.Fatal("a read through the black hole returned nil")
		}
	}
	f.proxy.Reset() // down: every dial reset
	start, before := time.Now(), f.store.fencer.Stats().Dials
	for time.Since(start) < 4*time.Second {
		ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
		_ = f.store.Set(ctx, "w", []byte("v"), time.Minute)
		cancel()
	}
	dials := f.store.fencer.Stats().Dials - before
	perSecond := float64(dials) / time.Since(start).Seconds()
	t.Logf("killer dials in 4 s while down: %d (%.1f a second); FenceStats %+v", dials, perSecond, f.store.FenceStats())
	if perSecond > 20 {
		t.Fatalf("%.1f killer dials a second while the server was down, want at most 20", perSecond)
	}
	f.proxy.Pass()
	start = time.Now()
	testwait.For(t, 5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(bg, 200*time.Millisecond)
		defer cancel()
		return f.store.Set(ctx, "w", []byte("v"), time.Minute) == nil
	}, "the server to serve again")
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the first write went %v after the server was back, want within 1 s", d)
	}
	if st := f.store.FenceStats(); st.Fenced < 16 {
		t.Fatalf("FenceStats %+v, want the 16 failed connections fenced", st)
	}
}
