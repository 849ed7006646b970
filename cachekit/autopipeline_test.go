package cachekit

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestAutoPipelineOption pins Options.AutoPipeline: off by default, on
// when asked on a given client, and off (New still succeeds) on a Ring,
// which go-redis cannot auto-pipeline.
func TestAutoPipelineOption(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	if autoPipelineAll {
		t.Skip("CACHEKIT_TEST_AUTOPIPELINE forces the option on")
	}
	if c := newClient(t, Options{Redis: rdb}); c.l2.Pipelined() {
		t.Error("auto-pipelining is on by default")
	}
	if c := newClient(t, Options{Redis: rdb, AutoPipeline: true}); !c.l2.Pipelined() {
		t.Error("AutoPipeline: true left a given client without the stream")
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": rdb.Options().Addr}})
	t.Cleanup(func() { _ = ring.Close() })
	if c := newClient(t, Options{Redis: ring, AutoPipeline: true}); c.l2.Pipelined() {
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
	c, h, raw := heldClient(t, "set", "k", Options{AutoPipeline: true})
	if !c.l2.Pipelined() {
		t.Fatal("no stream")
	}
	whileHeld(t, h, func() error { return c.Set(bg, "k", "a") }, func() {
		mustSet(t, c, "other", "x")
		mustSet(t, c, "k", "b")
	})
	mustAgree(t, c, raw, "k", "b")
	mustAgree(t, c, raw, "other", "x")
}
