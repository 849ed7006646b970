package cachekit

import (
	"context"
	"path"
	"path/filepath"
	"runtime"
	"slices"
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

// moduleFiles lists, outermost first, the packages of this module's
// library code (not tests, not dependencies) of the frames on the calling
// goroutine's stack, one entry per frame.
func moduleFiles() []string {
	pcs := make([]uintptr, 64)
	n := runtime.Callers(2, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	var pkgs []string
	for {
		f, more := frames.Next()
		if strings.Contains(f.Function, "cachekit-io/cachekit-go/") && !strings.HasSuffix(f.File, "_test.go") {
			pkgs = append(pkgs, modulePkg(f.File))
		}
		if !more {
			break
		}
	}
	slices.Reverse(pkgs)
	return pkgs
}

// modulePkg is the directory, inside the module, of file's package
// (cachekit, cachekit/internal/guard, l2).
func modulePkg(file string) string {
	dir := filepath.ToSlash(filepath.Dir(file))
	for _, room := range []string{"/cachekit/internal/", "/internal/"} {
		if i := strings.LastIndex(dir, room); i >= 0 {
			return dir[i+1:]
		}
	}
	return path.Base(dir)
}

// checkWalls fails t when stack, counted at package grain (the walls are
// packages: files follow concepts, and a package is read as a whole),
// enters more than 4 of the module's packages, or comes back to one it
// left, except cachekit once from cachekit/internal/guard: the guard runs
// the Redis call cachekit hands it.
func checkWalls(t *testing.T, name string, stack []string) {
	t.Helper()
	var walk []string // the stack with each package's frames collapsed
	for _, p := range stack {
		if len(walk) == 0 || walk[len(walk)-1] != p {
			walk = append(walk, p)
		}
	}
	t.Logf("%s: %s", name, strings.Join(walk, " > "))
	seen := map[string]bool{}
	for i, p := range walk {
		if seen[p] && !(p == "cachekit" && walk[i-1] == "cachekit/internal/guard") {
			t.Errorf("%s re-enters %s after leaving it: %v", name, p, walk)
		}
		seen[p] = true
	}
	if len(seen) > 4 {
		t.Errorf("%s enters %d packages, want at most 4: %v", name, len(seen), walk)
	}
}

// TestHotPathWalls: the deepest stack of an encrypted L1-hit Get and of a
// Set through the public API enters at most 4 of this module's packages,
// and leaves none to come back to it (each package's frames are
// contiguous), so a reader follows the key through the rooms in one pass.
// The walk is logged.
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
// (GETRANGE and PTTL) passes cachekit, the guard, cachekit again (the call
// it hands the guard) and l2, once each. Auto-pipelining is off: a pipelined command's hook
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
