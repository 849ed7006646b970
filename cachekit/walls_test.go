package cachekit

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"
)

// stackProbe is a value whose msgpack encoding and decoding record the
// call stack: the deepest point of a Set (the encode, inside the seal) and
// of an L1-hit Get (the decode, after the open).
type stackProbe struct {
	N     int
	stack *[]string
}

func (p *stackProbe) EncodeMsgpack(e *msgpack.Encoder) error {
	*p.stack = moduleFiles()
	return e.EncodeInt(int64(p.N))
}

func (p *stackProbe) DecodeMsgpack(d *msgpack.Decoder) error {
	*p.stack = moduleFiles()
	var err error
	p.N, err = d.DecodeInt()
	return err
}

// moduleFiles lists, outermost first, the files of this module's library
// code (not tests, not dependencies) on the calling goroutine's stack.
func moduleFiles() []string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var files []string
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "cachekit-io/cachekit-go/") && !strings.HasSuffix(f.File, "_test.go") {
			files = append(files, moduleRel(f.File))
		}
		if !more {
			break
		}
	}
	for i, j := 0, len(files)-1; i < j; i, j = i+1, j-1 {
		files[i], files[j] = files[j], files[i]
	}
	return files
}

// moduleRel is file's path inside the module (cachekit/write.go,
// internal/guard/guard.go, l2/store.go).
func moduleRel(file string) string {
	dir, base := filepath.Split(file)
	dir = filepath.Clean(dir)
	for _, room := range []string{"cachekit", "l1", "l2", "protocol", "encryption"} {
		if filepath.Base(dir) == room {
			return room + "/" + base
		}
	}
	if i := strings.LastIndex(dir, "/internal/"); i >= 0 {
		return dir[i+1:] + "/" + base
	}
	return base
}

// checkWalls fails t when stack, counting the files of cachekit and its
// internal packages, enters more than 6 or comes back to one it left.
func checkWalls(t *testing.T, name string, stack []string) {
	t.Helper()
	t.Logf("%s: %s", name, strings.Join(stack, " > "))
	var ours []string
	for _, f := range stack {
		if strings.HasPrefix(f, "cachekit/") || strings.HasPrefix(f, "internal/") {
			ours = append(ours, f)
		}
	}
	seen := map[string]bool{}
	for i, f := range ours {
		if seen[f] && ours[i-1] != f {
			t.Errorf("%s re-enters %s after leaving it: %v", name, f, ours)
		}
		seen[f] = true
	}
	if len(seen) > 6 {
		t.Errorf("%s enters %d files, want at most 6: %v", name, len(seen), ours)
	}
}

// TestHotPathWalls: the deepest stack of an encrypted L1-hit Get and of a
// Set through the public API enters at most 6 of this module's files, and
// leaves none to come back to it (each file's frames are contiguous), so a
// reader follows the key through the rooms in one pass. The files are
// logged.
func TestHotPathWalls(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	var setStack, getStack []string
	if err := c.Set(bg, "k", &stackProbe{N: 7, stack: &setStack}); err != nil {
		t.Fatal(err)
	}
	got := stackProbe{stack: &getStack}
	if err := c.Get(bg, "k", &got); err != nil || got.N != 7 {
		t.Fatalf("Get = %v (%d)", err, got.N)
	}
	if st := c.Stats(); st.L1Hits != 1 {
		t.Fatalf("the Get was no L1 hit: %+v", st)
	}
	checkWalls(t, "Set", setStack)
	checkWalls(t, "L1-hit Get", getStack)
}

// stackAt is a go-redis hook that records the module's files on the stack
// when the command named name is sent, alone or in a pipeline.
type stackAt struct {
	name  string
	stack []string
}

func (h *stackAt) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *stackAt) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == h.name {
			h.stack = moduleFiles()
		}
		return next(ctx, cmd)
	}
}

func (h *stackAt) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if cmd.Name() == h.name {
				h.stack = moduleFiles()
			}
		}
		return next(ctx, cmds)
	}
}

// TestRedisPathWalls: with Redis, Reliability and Invalidation on, the
// stack when a Set sends its SET and when an L1-miss Get sends its read
// (GETRANGE and PTTL) passes the operation's file, outcome.go, the guard and
// calls.go once each. Auto-pipelining is off: a pipelined command's hook
// runs on the AutoPipeliner's batch goroutine, not the caller's (a lone
// caller, as here, would send directly anyway).
func TestRedisPathWalls(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Reliability: &Reliability{}, Invalidation: &Invalidation{}, DisableAutoPipeline: true})
	set, get := &stackAt{name: "set"}, &stackAt{name: "getrange"}
	rdb.AddHook(set)
	rdb.AddHook(get)
	mustSet(t, c, "k", "v")
	c.FlushLocal()
	var v string
	if err := c.Get(bg, "k", &v); err != nil || v != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
	if set.stack == nil || get.stack == nil {
		t.Fatal("a command was not seen")
	}
	checkWalls(t, "Set (SET sent)", set.stack)
	checkWalls(t, "L1-miss Get (GETRANGE sent)", get.stack)
}
