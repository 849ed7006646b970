package cachekit

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

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
		if i := strings.Index(f.File, "/cachekit-go/"); i >= 0 || strings.Contains(f.Function, "cachekit-io/cachekit-go/") {
			if !strings.HasSuffix(f.File, "_test.go") {
				files = append(files, filepath.Base(filepath.Dir(f.File))+"/"+filepath.Base(f.File))
			}
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
	for name, stack := range map[string][]string{"Set": setStack, "L1-hit Get": getStack} {
		t.Logf("%s: %s", name, strings.Join(stack, " > "))
		seen := map[string]bool{}
		for i, f := range stack {
			if seen[f] && stack[i-1] != f {
				t.Errorf("%s re-enters %s after leaving it: %v", name, f, stack)
			}
			seen[f] = true
		}
		if len(seen) > 6 {
			t.Errorf("%s enters %d files, want at most 6: %v", name, len(seen), stack)
		}
	}
}
