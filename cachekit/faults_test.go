package cachekit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// The standalone fault suite. Each case builds a Client from a preset
// (Production: fail-open; Secure: fail-closed) with default reliability
// options, pointed at a private redis-server (through a loopback proxy for
// the network faults), writes some keys, runs a load of Gets and Sets,
// applies a real fault for faultFor, ends it, and asserts: no panic, no
// wrong value, every call bounded, recovery within the limit, the keys
// written before the fault intact (unless the fault itself destroys data),
// and no goroutine left a second after Close. Each case logs a markdown
// row (FAULTROW) for the tables in docs/production.md.

const (
	faultFor   = 1500 * time.Millisecond
	callBound  = 500 * time.Millisecond // acceptance: every call within 500 ms
	openBound  = time.Millisecond       // acceptance: within 1 ms while the breaker is open
	preKeys    = 32
	recoverStd = 2 * time.Second
	preTraffic = 200 // calls the load makes before a fault is applied
)

// standaloneFault is one fault on a single server.
type standaloneFault struct {
	name string
	// inject applies the fault; heal ends it. viaProxy routes the Client
	// through a loopback proxy the fault controls.
	inject, heal func(f *faultEnv)
	viaProxy     bool
	// losesData: the fault destroys Redis's data (a kill without
	// persistence); the pre-fault keys may read as misses, never as
	// wrong values.
	losesData bool
	// breakerStays: a fault Redis answers (OOM): the breaker must not open.
	breakerStays bool
}

// faultEnv is what a fault acts on.
type faultEnv struct {
	srv   *redistest.Server
	proxy *redistest.Proxy
	raw   *redis.Client
}

func standaloneFaults() []standaloneFault {
	return []standaloneFault{
		{name: "refused (stopped, restarted with its data)",
			inject: func(f *faultEnv) { f.srv.Stop() }, heal: func(f *faultEnv) { f.srv.Restart() }},
		{name: "hang (SIGSTOP, SIGCONT)",
			inject: func(f *faultEnv) { f.srv.Pause() }, heal: func(f *faultEnv) { f.srv.Resume() }},
		{name: "kill -9, restart on the same port", losesData: true,
			inject: func(f *faultEnv) { f.srv.Kill() }, heal: func(f *faultEnv) { f.srv.Restart() }},
		{name: "OOM (maxmemory, noeviction)", breakerStays: true,
			inject: func(f *faultEnv) {
				f.raw.ConfigSet(bg, "maxmemory-policy", "noeviction")
				f.raw.ConfigSet(bg, "maxmemory", "1")
			},
			heal: func(f *faultEnv) { f.raw.ConfigSet(bg, "maxmemory", "0") }},
		{name: "slow replies (DEBUG SLEEP 1.5)",
			inject: func(f *faultEnv) {
				go func() { _, _ = redistest.Do(f.srv.Addr(), "DEBUG", "SLEEP", "1.5") }()
			},
			heal: func(f *faultEnv) {
				// DEBUG SLEEP ends by itself; wait until the server answers.
				waitAnswers(f.srv.Addr())
			}},
		{name: "proxy black hole", viaProxy: true,
			inject: func(f *faultEnv) { f.proxy.BlackHole() }, heal: func(f *faultEnv) { f.proxy.Pass() }},
		{name: "proxy resets connections", viaProxy: true,
			inject: func(f *faultEnv) { f.proxy.Reset() }, heal: func(f *faultEnv) { f.proxy.Pass() }},
		{name: "proxy resets mid-reply", viaProxy: true,
			inject: func(f *faultEnv) { f.proxy.ResetMidReply() }, heal: func(f *faultEnv) { f.proxy.Pass() }},
	}
}

// waitAnswers polls a server until it answers PING (at most 5 s).
func waitAnswers(addr string) {
	within(5*time.Second, func() bool { _, err := redistest.Do(addr, "PING"); return err == nil })
}

func TestFaultsStandalone(t *testing.T) {
	// Not parallel: bounds call latencies (500 ms, 1 ms while open) and counts the goroutines left after Close.
	for _, mode := range []string{"production", "secure"} {
		for _, fc := range standaloneFaults() {
			t.Run(mode+"/"+fc.name, func(t *testing.T) { runStandaloneFault(t, mode, fc) })
		}
	}
}

func runStandaloneFault(t *testing.T, mode string, fc standaloneFault) {
	srv := redistest.StartArgs(t, "--enable-debug-command", "yes")
	f := &faultEnv{srv: srv, raw: redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})}
	t.Cleanup(func() { _ = f.raw.Close() })
	url := srv.URL()
	if fc.viaProxy {
		f.proxy = redistest.StartProxy(t, srv.Addr())
		url = f.proxy.URL()
	}
	opts := Production()
	if mode == "secure" {
		var err error
		if opts, err = Secure(strings.Repeat("42", 32)); err != nil {
			t.Fatal(err)
		}
	}
	opts.RedisURL = url
	c := newClient(t, opts)
	writePre(t, c, preKeys)
	load := startLoad(c, 4, nil)
	load.await(t, preTraffic, "traffic before the fault")
	degraded := c.ReliabilityStats().Degraded
	load.setPhase("during")
	fc.inject(f)
	// The fault lasts faultFor of real time: the redis-server (stopped,
	// SIGSTOPped, asleep in DEBUG SLEEP) and the proxy live on the wall
	// clock, and the load's calls are measured against it for the table.
	time.Sleep(faultFor)
	load.setPhase("after")
	res := load.result(mode + ": " + fc.name)
	res.Degraded = c.ReliabilityStats().Degraded - degraded
	fc.heal(f)
	rec := recoverWithin(t, c, f.raw, "probe", recoverStd)
	load.halt()
	res.Recover = rec
	res.Total = preKeys
	res.Lost = checkPre(t, c, preKeys)
	checkFault(t, res, load, fc.losesData)
	st := c.ReliabilityStats()
	if fc.breakerStays && st.BreakerOpened > 0 {
		t.Errorf("breaker opened %d times on a fault Redis answers", st.BreakerOpened)
	}
	if st.Breaker != BreakerClosed {
		t.Errorf("breaker %v after recovery, want closed", st.Breaker)
	}
	noGoroutinesAfterClose(t, c)
}

// TestCallerDeadlineBoundsHungRedis: a 100 ms caller deadline bounds a Get
// against a hung (SIGSTOPped) Redis to 150 ms, in every preset, and with
// Reliability off too (the client New opens honours ctx deadlines).
func TestCallerDeadlineBoundsHungRedis(t *testing.T) {
	// Not parallel: bounds a Get at 150 ms.
	secure, err := Secure(strings.Repeat("42", 32))
	if err != nil {
		t.Fatal(err)
	}
	for name, opts := range map[string]Options{"minimal": Minimal(), "production": Production(), "secure": secure} {
		t.Run(name, func(t *testing.T) {
			srv := redistest.Start(t)
			opts.RedisURL = srv.URL()
			c := newClient(t, opts)
			mustSet(t, c, "k", "v")
			srv.Pause()
			defer srv.Resume()
			var worst time.Duration
			for range 5 {
				ctx, cancel := context.WithTimeout(bg, 100*time.Millisecond)
				start := time.Now()
				_, err := Get[string](ctx, c, "not-in-l1")
				d := time.Since(start)
				cancel()
				worst = max(worst, d)
				var be *BackendError
				if !errors.As(err, &be) {
					t.Fatalf("Get against a hung Redis = %v, want a *BackendError (or a miss wrapping one)", err)
				}
			}
			t.Logf("slowest of 5 Gets with a 100 ms deadline: %v", worst)
			if worst > 150*time.Millisecond {
				t.Fatalf("Get with a 100 ms deadline took %v against a hung Redis, want <= 150ms", worst)
			}
		})
	}
}

// newProductionTimed builds a Production Client on srv and returns it with
// how long New took.
func newProductionTimed(t *testing.T, srv *redistest.Server) (*Client, time.Duration) {
	t.Helper()
	opts := Production()
	opts.RedisURL = srv.URL()
	start := time.Now()
	c := newClient(t, opts)
	return c, time.Since(start)
}

// TestRedisDownAtStart: New neither fails nor blocks past its documented
// bound when Redis is down (refused: at once; hung: about a second), Ping
// reports the outage with a *BackendError, and the Client works once Redis
// is up.
func TestRedisDownAtStart(t *testing.T) {
	// Not parallel: bounds New and Ping in wall time.
	t.Run("refused", func(t *testing.T) {
		srv := redistest.Start(t)
		srv.Stop()
		c, d := newProductionTimed(t, srv)
		if d > 300*time.Millisecond {
			t.Fatalf("New took %v with Redis refusing connections", d)
		}
		var be *BackendError
		if err := c.Ping(bg); !errors.As(err, &be) {
			t.Fatalf("Ping with Redis down = %v, want *BackendError", err)
		}
		srv.Restart()
		waitWithin(t, 3*time.Second, func() bool { return c.Ping(bg) == nil })
		waitWithin(t, 3*time.Second, func() bool { return c.InvalidationStats().Tracking })
		mustSet(t, c, "k", "v")
	})
	t.Run("hung", func(t *testing.T) {
		srv := redistest.Start(t)
		srv.Pause()
		defer srv.Resume()
		c, d := newProductionTimed(t, srv)
		if d > 1200*time.Millisecond {
			t.Fatalf("New took %v with Redis hung, want about a second at most", d)
		}
		start := time.Now()
		if err := c.Ping(bg); err == nil {
			t.Fatal("Ping of a hung Redis succeeded")
		}
		if d := time.Since(start); d > 300*time.Millisecond {
			t.Fatalf("Ping of a hung Redis took %v, want about AttemptTimeout (200ms)", d)
		}
	})
}
