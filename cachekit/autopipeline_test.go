package cachekit

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestAutoPipelineOption pins the auto-pipelining options: on by default,
// on a given client and on the one New opens, off with
// DisableAutoPipeline, and off (New still succeeds) on a Ring, which
// go-redis cannot auto-pipeline.
func TestAutoPipelineOption(t *testing.T) {
	t.Parallel()
	srv, rdb := withRedis(t)
	if noAutoPipeline {
		t.Skip("CACHEKIT_TEST_AUTOPIPELINE=0 turns the option off")
	}
	if c := newClient(t, Options{Redis: rdb}); !c.pipelined {
		t.Error("a given client is not auto-pipelined by default")
	}
	if c := newClient(t, Options{RedisURL: "redis://" + srv.Addr()}); !c.pipelined {
		t.Error("the client New opens is not auto-pipelined by default")
	}
	if c := newClient(t, Options{Redis: rdb, DisableAutoPipeline: true}); c.pipelined {
		t.Error("DisableAutoPipeline left the stream on")
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": rdb.Options().Addr}})
	t.Cleanup(func() { _ = ring.Close() })
	if c := newClient(t, Options{Redis: ring}); c.pipelined {
		t.Error("a Ring reports a stream")
	}
}

// TestAutoPipelineHoldDoesNotHoldTheStream: with auto-pipelining on, a Set
// held after Redis applied it (the hold seam, below the pipeliner) holds
// its caller only: another Set of the same Client, which then rides the
// stream (a call is in flight), completes meanwhile, and the Client agrees
// with Redis afterwards.
func TestAutoPipelineHoldDoesNotHoldTheStream(t *testing.T) {
	t.Parallel()
	c, h, raw := heldClient(t, "set", "k", Options{})
	if !c.pipelined {
		t.Skip("auto-pipelining is off (CACHEKIT_TEST_AUTOPIPELINE=0)")
	}
	whileHeld(t, h, func() error { return c.Set(bg, "k", "a") }, func() {
		mustSet(t, c, "other", "x")
		mustSet(t, c, "k", "b")
	})
	mustAgree(t, c, raw, "k", "b")
	mustAgree(t, c, raw, "other", "x")
}
