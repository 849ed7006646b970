package l2

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// TestGoRedisV924 pins the go-redis v9.24.0 changes this package relies
// on, each against this package's own use of them.
func TestGoRedisV924(t *testing.T) {
	// #4095: a WithTimeout clone (the stream's pipeliner, AutoPipeline with
	// an ioTimeout) runs the parent's hooks. Before v9.24 it dropped them,
	// so a hook on an injected client never saw a pipelined command.
	t.Run("stream runs the client's hooks", func(t *testing.T) {
		f := setup(t)
		if err := f.store.AutoPipeline(300 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
		f.hook.reset()
		cmd := redis.NewStringCmd(bg, "get", "k")
		if err := f.store.stream.run(bg, []redis.Cmder{cmd}); err != nil {
			t.Fatal(err)
		}
		if p, q := f.hook.process.Load(), f.hook.pipeline.Load(); p+q != 1 {
			t.Fatalf("the client's hook saw %d commands and %d pipelines of the stream, want one of either", p, q)
		}
	})

	// #4263, #4306: a socket timeout that the caller's ctx deadline caused
	// matches context.DeadlineExceeded (and is still a net.Error timeout),
	// so IsTransient and the guard's Settle read it as the deadline it is;
	// and go-redis no longer retries it on its own (an injected client
	// with go-redis's default MaxRetries returns at the deadline, not a
	// retry later).
	t.Run("deadline timeout is context.DeadlineExceeded, not retried", func(t *testing.T) {
		srv := redistest.Start(t)
		p := redistest.StartProxy(t, srv.Addr())
		rdb := redis.NewClient(&redis.Options{Addr: p.Addr(), ContextTimeoutEnabled: true})
		t.Cleanup(func() { _ = rdb.Close() })
		s := New(rdb)
		if err := s.Ping(bg); err != nil {
			t.Fatal(err)
		}
		p.BlackHole()
		ctx, cancel := context.WithTimeout(bg, 150*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := s.Get(ctx, "k")
		took := time.Since(start)
		var ne net.Error
		if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Get past its deadline = %v, want an error matching context.DeadlineExceeded and a net.Error timeout", err)
		}
		if !IsTransient(err) {
			t.Fatal("a deadline is transient: the caller decides with its ctx")
		}
		if took > 600*time.Millisecond {
			t.Fatalf("Get returned %v after a 150 ms deadline: go-redis retried it", took)
		}
	})

	// #4304: with go-redis's default dial settings, a refused connection is
	// reported after about 0.4 s (1.7 s before), so an injected client with
	// defaults fails fast on a dead Redis.
	t.Run("refused dial fails fast with defaults", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close() // nothing listens there now
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		t.Cleanup(func() { _ = rdb.Close() })
		start := time.Now()
		_, err = New(rdb).Get(bg, "k")
		if err == nil || errors.Is(err, ErrNotFound) {
			t.Fatalf("Get on a refused address = %v", err)
		}
		if took := time.Since(start); took > 1200*time.Millisecond {
			t.Fatalf("a refused dial took %v to report, want about 0.4 s", took)
		}
	})

	// #4110 (a maintenance handoff gave one connection two owners): the
	// clients Open builds keep maintenance notifications off.
	t.Run("Open turns maintenance notifications off", func(t *testing.T) {
		for _, u := range []string{"redis://127.0.0.1:1/0", "redis+cluster://127.0.0.1:1"} {
			rdb, err := Open(u, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var cfg *maintnotifications.Config
			switch c := rdb.(type) {
			case *redis.Client:
				cfg = c.Options().MaintNotificationsConfig
			case *redis.ClusterClient:
				cfg = c.Options().MaintNotificationsConfig
			}
			_ = rdb.Close()
			if cfg == nil || cfg.Mode != maintnotifications.ModeDisabled {
				t.Fatalf("Open(%s): maintenance notifications %+v, want ModeDisabled", u, cfg)
			}
		}
	})
}
