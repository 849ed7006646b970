package cachekit

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// tripLog is a go-redis hook that records each round trip a Client makes:
// the names of the commands it carried, in order ("+"-joined), one entry
// per round trip (a command alone, or a pipeline).
type tripLog struct {
	mu    sync.Mutex
	trips []string
}

func (h *tripLog) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *tripLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.add(cmd)
		return next(ctx, cmd)
	}
}

func (h *tripLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.add(cmds...)
		return next(ctx, cmds)
	}
}

func (h *tripLog) add(cmds ...redis.Cmder) {
	if len(cmds) == 0 || connInit(cmds[0]) {
		return
	}
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Name()
	}
	h.mu.Lock()
	h.trips = append(h.trips, strings.Join(names, "+"))
	h.mu.Unlock()
}

// take returns the round trips recorded since the last take.
func (h *tripLog) take() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := strings.Join(h.trips, " | ")
	h.trips = nil
	return s
}

// connInit tells the commands go-redis sends on its own when it opens a
// connection.
func connInit(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

// TestCommandsPerOperation pins the Redis commands and round trips of the
// main operations, sent directly (auto-pipelining off, so one hook call is
// one round trip) by an encrypted Client without L1, on a healthy Redis:
// Get, Set, a GetOrLoad miss (read, lease, store), an MGetOrLoad miss
// (read, leases, stores: one pipeline each) and an SWR refresh. The
// refactors of issue 42 left them as they were at b9a2389; issue 43 added
// the refresh's PEXPIRETIME (read before its loader, compared when it
// stores).
func TestCommandsPerOperation(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	log := &tripLog{}
	rdb.AddHook(log)
	o := Options{Redis: rdb, Encryption: encConfig(""), DisableAutoPipeline: true, Reliability: &Reliability{}}
	c := newClient(t, o)
	load := func(context.Context) (string, error) { return "v", nil }
	mload := func(_ context.Context, keys []string) (map[string]string, error) {
		out := map[string]string{}
		for _, k := range keys {
			out[k] = "v"
		}
		return out, nil
	}
	steps := []struct {
		name string
		run  func() error
		want string
	}{
		{"Set", func() error { return c.Set(bg, "a", "v") }, "set"},
		{"Get", func() error { _, err := Get[string](bg, c, "a"); return err }, "getrange"},
		{"GetOrLoad miss", func() error { _, err := GetOrLoad(bg, c, "b", load); return err },
			"getrange | evalsha | evalsha"},
		{"MGetOrLoad miss", func() error { _, err := MGetOrLoad(bg, c, []string{"c", "d"}, mload); return err },
			"mget+exists | eval+eval | eval+eval"},
	}
	for _, s := range steps { // once to load the scripts (NOSCRIPT, SCRIPT LOAD)
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
	}
	for _, k := range []string{"b", "c", "d"} {
		_ = c.Delete(bg, k)
	}
	log.take()
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := log.take(); got != s.want {
			t.Errorf("%s sent %q, want %q", s.name, got, s.want)
		}
	}

	// An SWR refresh (twice: the first loads the compare-and-set script):
	// a read that finds the entry due starts it.
	w, clk := swrClient(t, func(o *Options) { o.L1MaxBytes, o.DisableAutoPipeline = 0, true; o.Redis = rdb })
	for _, k := range []string{"e", "f"} {
		if _, err := GetOrLoadTTL(bg, w, k, swrTTL, load); err != nil {
			t.Fatal(err)
		}
		clk.Add(swrDue)
		log.take()
		loads := w.Stats().Loads
		waitWithin(t, 5*time.Second, func() bool {
			_, _ = GetOrLoadTTL(bg, w, k, swrTTL, load)
			return w.Stats().Loads > loads
		})
		waitWithin(t, 5*time.Second, w.swrIdle)
	}
	// The reads that found it due, then the refresh: its PEXPIRETIME
	// (with the lease probe), then the compare-and-set, then more reads.
	if trips := log.take(); !strings.Contains(trips, "getrange+pttl | pexpiretime+strlen+getrange | evalsha") {
		t.Errorf("SWR reads and refresh sent %q, want getrange+pttl | pexpiretime+strlen+getrange | evalsha among them", trips)
	}
}
