package l2

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
	"github.com/redis/go-redis/v9"
)

// fenceFixture is a Store whose client reaches a real server through a
// proxy that can delay one connection's requests.
type fenceFixture struct {
	srv   *redistest.Server
	proxy *redistest.Proxy
	rdb   *redis.Client
	store *Store
}

func newFenceFixture(t *testing.T, fence bool, opts *redis.Options) *fenceFixture {
	t.Helper()
	srv := redistest.Start(t)
	p := redistest.StartProxy(t, srv.Addr())
	if opts == nil {
		opts = &redis.Options{}
	}
	opts.Addr = p.Addr()
	opts.MaxRetries, opts.DialerRetries, opts.ContextTimeoutEnabled = -1, 1, true
	rdb := redis.NewClient(opts)
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if fence {
		if err := s.Fence(nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = s.Close() })
	// A connection in each pool: single commands, and pipelines (go-redis
	// v9.24 keeps a pool of their own), so that Delay reaches both.
	if _, err := s.Delete(bg, "warm"); err != nil {
		t.Fatal(err)
	}
	return &fenceFixture{srv: srv, proxy: p, rdb: rdb, store: s}
}

// direct reads key on the server itself, past the proxy ("" when
// missing).
func (f *fenceFixture) direct(t *testing.T, key string) string {
	t.Helper()
	if n, err := redistest.Do(f.srv.Addr(), "EXISTS", key); err != nil || n == ":0" {
		return ""
	}
	v, err := redistest.DoBulk(f.srv.Addr(), "GET", key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// delayedWrite runs write with its connection's requests (that
// connection's only) delayed past its 150 ms deadline, and checks that it
// failed with an unknown outcome.
func (f *fenceFixture) delayedWrite(t *testing.T, write func(ctx context.Context) error) {
	t.Helper()
	f.proxy.DelayNext(600 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
	err := write(ctx)
	cancel()
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a write whose bytes are delayed past its deadline = %v, want ErrOutcomeUnknown", err)
	}
}

// settle waits until the proxy has forwarded (or dropped with its killed
// connection) every delayed chunk.
func (f *fenceFixture) settle(t *testing.T) {
	t.Helper()
	testwait.For(t, 5*time.Second, func() bool { return f.proxy.Held() == 0 }, "the delayed requests to go")
}

// TestFenceOrdersWrites: a Set whose bytes are delayed past its deadline
// (its connection then closed by go-redis) must not land after the next
// Set of the same Store, which goes on another connection and returns
// nil. The delaying proxy delivers held bytes after the client closed, as
// a middlebox or a slow retransmission does; only a server-side kill of
// the first connection stops them. Without Fence the old value wins:
// that is the defect the fence closes.
func TestFenceOrdersWrites(t *testing.T) {
	for _, fenced := range []bool{true, false} {
		name := "fenced"
		if !fenced {
			name = "unfenced"
		}
		t.Run(name, func(t *testing.T) {
			f := newFenceFixture(t, fenced, nil)
			if err := f.store.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
				t.Fatal(err)
			}
			f.delayedWrite(t, func(ctx context.Context) error { return f.store.Set(ctx, "k", []byte("old"), time.Minute) })
			if err := f.store.Set(bg, "k", []byte("new"), time.Minute); err != nil {
				t.Fatalf("the next Set: %v", err)
			}
			f.settle(t)
			got := f.direct(t, "k")
			if fenced {
				if got != "new" {
					t.Fatalf("Redis holds %q after Set(old) timed out and Set(new) returned nil: the delayed write landed last", got)
				}
				if st := f.store.FenceStats(); st.Fenced < 1 || st.Unfenced != 0 {
					t.Fatalf("FenceStats %+v, want a fence and nothing unfenced", st)
				}
				return
			}
			if got != "old" {
				t.Skipf("unfenced, Redis holds %q: the proxy did not reorder this run", got)
			}
		})
	}
}

// TestFenceCoversEveryWrite: Delete, MSet, SetCond and Expire go through
// the same connections, so a delayed one of each never lands after the
// next write.
func TestFenceCoversEveryWrite(t *testing.T) {
	for _, tc := range fenceWriteCases {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, newFenceFixture(t, true, nil)) })
	}
}

// fenced is a Store with Fence whose writes of "k" a proxy can delay.
type fenced interface {
	storeOf() *Store
	// delayedWrite runs write with its bytes delayed past its deadline and
	// checks that its outcome is unknown.
	delayedWrite(t *testing.T, write func(ctx context.Context) error)
	// heldK waits for the delayed bytes to go and reads "k" on its server
	// itself ("" when missing).
	heldK(t *testing.T) string
}

func (f *fenceFixture) storeOf() *Store { return f.store }

func (f *fenceFixture) heldK(t *testing.T) string {
	t.Helper()
	f.settle(t)
	return f.direct(t, "k")
}

// check runs the case on f: the write delayed past its deadline, then the
// next write, then what the server holds.
func (tc fenceCase) check(t *testing.T, f fenced) {
	t.Helper()
	s := f.storeOf()
	if err := s.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	// Once undelayed, so that a script is in Redis's cache: the delayed
	// EVALSHA must not be a NOSCRIPT no-op.
	if err := tc.delayed(s, bg); err != nil {
		t.Fatal(err)
	}
	if err := s.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	f.delayedWrite(t, func(ctx context.Context) error { return tc.delayed(s, ctx) })
	if err := tc.next(s); err != nil {
		t.Fatalf("the next write: %v", err)
	}
	if got := f.heldK(t); got != tc.want {
		t.Fatalf("Redis holds %q, want %q: the delayed write landed after the next one", got, tc.want)
	}
}

// fenceCase is a write delayed on key "k", the next write, and what
// Redis must hold after both.
type fenceCase struct {
	name    string
	delayed func(s *Store, ctx context.Context) error
	next    func(s *Store) error
	want    string
}

// fenceWriteCases are the writes TestFenceCoversEveryWrite delays (on key
// "k"), each with the next write and what Redis must hold after both.
var fenceWriteCases = []fenceCase{
	{"Delete then Set", func(s *Store, ctx context.Context) error { _, err := s.Delete(ctx, "k"); return err },
		func(s *Store) error { return s.Set(bg, "k", []byte("new"), time.Minute) }, "new"},
	{"MSet then Set", func(s *Store, ctx context.Context) error {
		return s.MSet(ctx, []Item{{Key: "k", Value: []byte("old"), TTL: time.Minute}})
	}, func(s *Store) error { return s.Set(bg, "k", []byte("new"), time.Minute) }, "new"},
	{"SetCond XX then Set", func(s *Store, ctx context.Context) error {
		_, err := s.SetCond(ctx, "k", []byte("old"), time.Minute, true, false)
		return err
	}, func(s *Store) error { return s.Set(bg, "k", []byte("new"), time.Minute) }, "new"},
	{"Expire then Set", func(s *Store, ctx context.Context) error {
		_, err := s.Expire(ctx, "k", time.Millisecond)
		return err
	}, func(s *Store) error { return s.Set(bg, "k", []byte("new"), time.Minute) }, "new"},
	{"Set then Delete", func(s *Store, ctx context.Context) error { return s.Set(ctx, "k", []byte("old"), time.Minute) },
		func(s *Store) error { _, err := s.Delete(bg, "k"); return err }, ""},
}

// TestFenceHoldsWritesUntilKilled: the next write waits for the fence
// even when it has a connection at hand and the kill is slow: here the
// write takes an idle pooled connection at once while the kill must dial
// a slow new one, and the delayed bytes arrive in between. Without the
// wait the next write lands first and the delayed one after it.
func TestFenceHoldsWritesUntilKilled(t *testing.T) {
	f := newFenceFixture(t, true, nil)
	// Two idle connections in the pool: the delayed write takes one, the
	// next write the other.
	errs := make(chan error, 2)
	hold := redistest.NewHold("set", "k0")
	f.rdb.AddHook(hold)
	go func() { errs <- f.store.Set(bg, "k0", []byte("v"), time.Minute) }()
	<-hold.Held()
	go func() { errs <- f.store.Set(bg, "k1", []byte("v"), time.Minute) }()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	hold.Release()
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	f.proxy.DelayNext(300 * time.Millisecond)
	f.proxy.SlowDial(600 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	err := f.store.Set(ctx, "k", []byte("old"), time.Minute)
	cancel()
	if !errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("the delayed Set = %v, want ErrOutcomeUnknown", err)
	}
	if err := f.store.Set(bg, "k", []byte("new"), time.Minute); err != nil {
		t.Fatalf("the next Set: %v", err)
	}
	f.proxy.SlowDial(0)
	f.settle(t)
	if got := f.direct(t, "k"); got != "new" {
		t.Fatalf("Redis holds %q: the next Set went out before the kill and the delayed one landed after it", got)
	}
	if st := f.store.FenceStats(); st.Held < 1 {
		t.Fatalf("FenceStats %+v: no write was held", st)
	}
}

// TestFenceRefused: a user without +client|kill cannot fence; the Store
// says so (refused hears it, FenceStats.On turns false, Unfenced counts it) and
// keeps working.
func TestFenceRefused(t *testing.T) {
	srv := redistest.Start(t)
	if _, err := redistest.Do(srv.Addr(), "ACL", "SETUSER", "nokill", "on", ">pw", "~*", "&*", "+@all", "-client|kill"); err != nil {
		t.Fatal(err)
	}
	p := redistest.StartProxy(t, srv.Addr())
	rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), Username: "nokill", Password: "pw",
		MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	heard := make(chan error, 4)
	if err := s.Fence(func(err error) { heard <- err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if !s.FenceStats().On {
		t.Fatal("FenceStats().On before any refusal = false")
	}
	if err := s.Set(bg, "k", []byte("v0"), time.Minute); err != nil {
		t.Fatal(err)
	}
	p.Delay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_ = s.Set(ctx, "k", []byte("old"), time.Minute)
	cancel()
	select {
	case err := <-heard:
		if !IsRefusal(err) || strings.Contains(err.Error(), "pw") {
			t.Fatalf("refused heard %v, want a refusal (NOPERM) without credentials", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("refused never heard the refused CLIENT KILL")
	}
	if s.FenceStats().On || s.FenceStats().Unfenced != 1 {
		t.Fatalf("stats %+v after a refused kill: want On false and one unfenced", s.FenceStats())
	}
	if err := s.Set(bg, "k", []byte("new"), time.Minute); err != nil {
		t.Fatalf("a Set after the refusal: %v", err)
	}
}

// TestFenceSparesSubscriptions: a subscribed connection's reads time out
// while it waits, which is no failure: it is never killed.
func TestFenceSparesSubscriptions(t *testing.T) {
	f := newFenceFixture(t, true, nil)
	ps := f.rdb.Subscribe(bg, "ch")
	defer ps.Close()
	if _, err := ps.Receive(bg); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := ps.ReceiveTimeout(bg, 20*time.Millisecond); err == nil {
			t.Fatal("a message on a silent channel")
		}
	}
	if err := f.rdb.Publish(bg, "ch", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	msg, err := ps.ReceiveMessage(bg)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("the subscription after its read timeouts: %v, %v", msg, err)
	}
	if st := f.store.FenceStats(); st.Fenced != 0 || st.Unfenced != 0 {
		t.Fatalf("FenceStats %+v: a subscribed connection was fenced", st)
	}
}

// TestUnknownOutcome: which errors say a write's outcome is unknown.
func TestUnknownOutcome(t *testing.T) {
	f := newFenceFixture(t, true, nil)
	// A read that times out is no write.
	f.proxy.Delay(300 * time.Millisecond)
	ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	_, err := f.store.Get(ctx, "k")
	cancel()
	if err == nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a timed-out Get = %v, want a timeout that is no unknown write", err)
	}
	f.settle(t)
	// A write Redis answered has a known outcome, even an error.
	if _, err := redistest.Do(f.srv.Addr(), "LPUSH", "list", "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.SetCond(bg, "list", []byte("v"), time.Minute, false, false); err != nil && errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("an answered write's error %v matches ErrOutcomeUnknown", err)
	}
	// A write that could not be sent (nothing listens) is known not done.
	dead := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1}))
	if err := dead.Set(bg, "k", []byte("v"), time.Minute); err == nil || errors.Is(err, ErrOutcomeUnknown) {
		t.Fatalf("a Set whose dial was refused = %v, want an error that is no unknown outcome", err)
	}
}

// TestRetryAfterStoredAnswersStored: a conditional write resent after
// its first attempt stored (its reply lost) answers "stored" when it says
// again (its bytes are its own: SET NX finds its own bytes, a lease fill
// its value, a compare-and-set its new bytes), and only then: without
// again, a key that happens to hold the same bytes (another caller's
// write of the same value) answers "not stored", so two callers are never
// both told they stored.
func TestRetryAfterStoredAnswersStored(t *testing.T) {
	f := setup(t)
	val := []byte("exactly-these-bytes")
	if ok, err := f.store.SetCond(bg, "nx", val, time.Minute, false, false); err != nil || !ok {
		t.Fatalf("first SET NX = %v, %v", ok, err)
	}
	if ok, err := f.store.SetCond(bg, "nx", val, time.Minute, false, false); err != nil || ok {
		t.Fatalf("another SET NX of the same bytes = %v, %v; want not stored", ok, err)
	}
	if ok, err := f.store.SetCond(bg, "nx", val, time.Minute, false, true); err != nil || !ok {
		t.Fatalf("SET NX again with the same bytes = %v, %v; want stored", ok, err)
	}
	if ok, _ := f.store.SetCond(bg, "nx", []byte("other"), time.Minute, false, true); ok {
		t.Fatal("SET NX of other bytes over an entry reported stored")
	}
	lease := NewLease()
	if st, _, _, err := f.store.Acquire(bg, "fill", lease, time.Minute, ""); err != nil || st != LeaseAcquired {
		t.Fatalf("Acquire = %v, %v", st, err)
	}
	if ok, err := f.store.Fill(bg, "fill", lease, val, time.Minute, false); err != nil || !ok {
		t.Fatalf("Fill = %v, %v; want stored", ok, err)
	}
	if ok, err := f.store.Fill(bg, "fill", lease, val, time.Minute, false); err != nil || ok {
		t.Fatalf("Fill of the same bytes, not again = %v, %v; want not stored", ok, err)
	}
	if ok, err := f.store.Fill(bg, "fill", lease, val, time.Minute, true); err != nil || !ok {
		t.Fatalf("Fill again = %v, %v; want stored", ok, err)
	}
	if err := f.store.Set(bg, "cas", []byte("seen"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if ok, err := f.store.SetIfDigest(bg, "cas", Digest([]byte("seen")), 0, val, time.Minute, false); err != nil || !ok {
		t.Fatalf("SetIfDigest = %v, %v; want stored", ok, err)
	}
	if ok, err := f.store.SetIfDigest(bg, "cas", Digest([]byte("seen")), 0, val, time.Minute, false); err != nil || ok {
		t.Fatalf("SetIfDigest of the same bytes, not again = %v, %v; want not stored", ok, err)
	}
	if ok, err := f.store.SetIfDigest(bg, "cas", Digest([]byte("seen")), 0, val, time.Minute, true); err != nil || !ok {
		t.Fatalf("SetIfDigest again = %v, %v; want stored", ok, err)
	}
}

// TestLateConditionalWritesAreHarmless: the writes that compare in Lua
// (a lease's Fill, Renew and Release, SWR's SetIfDigest) are harmless
// when they land late even without a fence: the next write replaced what
// they compare against. Here no fence runs, and each is delayed past its
// deadline, then the key is Set, then the delayed bytes arrive.
func TestLateConditionalWritesAreHarmless(t *testing.T) {
	leased := func(s *Store) string { // a lease on k, the compared value
		lease := NewLease()
		_, _, _, _ = s.Acquire(bg, "k", lease, time.Minute, "")
		return lease
	}
	cases := []struct {
		name    string
		prepare func(s *Store) string // returns what the delayed write compares
		delayed func(s *Store, ctx context.Context, arg string) error
	}{
		{"Fill", leased, func(s *Store, ctx context.Context, lease string) error {
			_, err := s.Fill(ctx, "k", lease, []byte("loaded"), time.Minute, false)
			return err
		}},
		{"Renew", leased, func(s *Store, ctx context.Context, lease string) error {
			_, err := s.Renew(ctx, "k", lease, time.Millisecond)
			return err
		}},
		{"Release", leased, func(s *Store, ctx context.Context, lease string) error {
			_, err := s.Release(ctx, "k", lease)
			return err
		}},
		{"SetIfDigest", func(s *Store) string {
			_ = s.Set(bg, "k", []byte("served"), time.Minute)
			return Digest([]byte("served"))
		}, func(s *Store, ctx context.Context, digest string) error {
			_, err := s.SetIfDigest(ctx, "k", digest, 0, []byte("refreshed"), time.Minute, false)
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFenceFixture(t, false, nil)
			// Once undelayed, so that the script is in Redis's cache.
			arg := tc.prepare(f.store)
			_ = tc.delayed(f.store, bg, arg)
			arg = tc.prepare(f.store)
			f.delayedWrite(t, func(ctx context.Context) error { return tc.delayed(f.store, ctx, arg) })
			if err := f.store.Set(bg, "k", []byte("new"), time.Minute); err != nil {
				t.Fatal(err)
			}
			f.settle(t)
			if got := f.direct(t, "k"); got != "new" {
				t.Fatalf("Redis holds %q after a late %s: want the Set's value", got, tc.name)
			}
			if ttl, _ := redistest.Do(f.srv.Addr(), "PTTL", "k"); ttl == ":1" || ttl == ":0" {
				t.Fatalf("the late %s changed the Set's TTL (%s)", tc.name, ttl)
			}
		})
	}
}

// TestFenceEndsWhenTheServerIsBack: a fence begun while the server was
// down (its kill backing off toward 500 ms between tries) ends as soon as
// the server is back and a write waits on it, so the first write after a
// restart is not held past its deadline. Three rounds: were the tries
// left 500 ms apart, a round would pass only when the next one happened to
// fall within the write's 150 ms.
func TestFenceEndsWhenTheServerIsBack(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	s := New(rdb)
	if err := s.Fence(nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	set := func(ctx context.Context, v string) error { return s.Set(ctx, "k", []byte(v), time.Minute) }
	for round := range 3 {
		// A greeted connection in the pool (a handshake's failure is not
		// fenced) fails on a hung server, which then dies: the kill cannot
		// reach it.
		if err := set(bg, "warm"); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		srv.Pause()
		ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		err := set(ctx, "lost")
		cancel()
		if !errors.Is(err, ErrOutcomeUnknown) {
			t.Fatalf("round %d: a Set to a hung server = %v, want ErrOutcomeUnknown", round, err)
		}
		srv.Kill()
		time.Sleep(1200 * time.Millisecond) // the kill's tries now 500 ms apart
		srv.Restart()
		ctx, cancel = context.WithTimeout(bg, 150*time.Millisecond)
		err = set(ctx, "v")
		cancel()
		if err != nil {
			t.Fatalf("round %d: the first Set after the restart = %v (FenceStats %+v)", round, err, s.FenceStats())
		}
	}
	if st := s.FenceStats(); st.Held < 3 || st.Fenced < 3 {
		t.Fatalf("FenceStats %+v: want a write held by each round's fence", st)
	}
}
