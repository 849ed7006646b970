package cachekit

import (
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// loseAnnouncement is a go-redis hook that counts the SET and DEL commands
// sent and, while armed, loses the reply of the next PUBLISH (io.EOF, a
// transient error) after Redis applied its pipeline.
type loseAnnouncement struct {
	writes atomic.Int32
	armed  atomic.Bool
}

func (h *loseAnnouncement) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *loseAnnouncement) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (h *loseAnnouncement) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			if c.Name() == "del" || c.Name() == "set" {
				h.writes.Add(1)
			}
		}
		err := next(ctx, cmds)
		for _, c := range cmds {
			if c.Name() == "publish" && h.armed.CompareAndSwap(true, false) {
				c.SetErr(io.EOF)
			}
		}
		return err
	}
}

// TestLostAnnouncementIsNotRetried: when the announcement sent beside a
// Set or a Delete fails, the write went through: it is not sent again (a
// retry would, and a Delete's count would then be 0), the call succeeds and
// the failure is counted in PublishFailures, not in L2Errors.
func TestLostAnnouncementIsNotRetried(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	h := &loseAnnouncement{}
	rdb.AddHook(h)
	c := newClient(t, Options{Redis: rdb, Reliability: &Reliability{}, Invalidation: &Invalidation{}})
	mustSet(t, c, "a", 1)
	h.writes.Store(0)
	h.armed.Store(true)
	mustSet(t, c, "b", 1)
	if n := h.writes.Load(); n != 1 {
		t.Fatalf("the Set sent %d SETs, want 1", n)
	}
	h.writes.Store(0)
	h.armed.Store(true)
	n, err := c.Raw().Delete(bg, "a", "b")
	if err != nil || n != 2 || h.writes.Load() != 2 {
		t.Fatalf("Delete(a, b) = %d, %v after %d DELs; want 2, nil after 2", n, err, h.writes.Load())
	}
	if f, e := c.InvalidationStats().PublishFailures, c.Stats().L2Errors; f != 2 || e != 0 {
		t.Fatalf("PublishFailures %d, L2Errors %d; want 2 and 0", f, e)
	}
}
