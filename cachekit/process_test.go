package cachekit

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// childEnv makes the test binary a lease child instead of running tests:
// "<mode> <redis addr> <key>".
const childEnv = "CACHEKIT_LEASE_CHILD"

// childLoad is how long a fleet child's loader works.
const childLoad = 300 * time.Millisecond

// leaseChild is one process of a cross-process test. Mode "hold" loads key
// with a loader that says "loading" and never returns (the parent kills
// it). Mode "fleet" says "ready", waits for its stdin to close, then
// GetOrLoads key with
// a loader that counts itself in Redis ("<key>:loads"), works for
// childLoad and prints "loaded <unix µs>", and prints "took <µs> <unix µs>"
// (how long the call took, and when it returned).
func leaseChild(args []string) int {
	if len(args) != 3 {
		return 2
	}
	mode, addr, key := args[0], args[1], args[2]
	if strings.HasPrefix(mode, "neg") {
		return negativeChild(mode, addr, key)
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	c, err := New(Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Invalidation: &Invalidation{}, FleetSingleFlight: true, LeaseTTL: time.Second})
	if err != nil {
		fmt.Println("new:", err)
		return 1
	}
	defer c.Close()
	ctx := context.Background()
	switch mode {
	case "hold":
		_, err = GetOrLoad(ctx, c, key, func(context.Context) (string, error) {
			fmt.Println("loading")
			select {}
		})
	case "fleet":
		fmt.Println("ready")
		_, _ = io.Copy(io.Discard, os.Stdin) // the start signal: stdin closes
		start := time.Now()
		var v string
		v, err = GetOrLoad(ctx, c, key, func(ctx context.Context) (string, error) {
			rdb.Incr(ctx, key+":loads")
			time.Sleep(childLoad) // the work a load does
			fmt.Println("loaded", time.Now().UnixMicro())
			return "v", nil
		})
		if err == nil && v != "v" {
			err = fmt.Errorf("got %q", v)
		}
		fmt.Println("took", time.Since(start).Microseconds(), time.Now().UnixMicro())
	}
	if err != nil {
		fmt.Println("error:", err)
		return 1
	}
	return 0
}

// startChild runs this test binary as a lease child.
func startChild(t *testing.T, spec string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+spec)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, stdin, bufio.NewScanner(out)
}

// fleetChild is a child process of a fleet test: closing its stdin is the
// start signal; out is what it prints.
type fleetChild struct {
	stdin io.WriteCloser
	out   *bufio.Scanner
}

// startReadyChildren starts n children as spec says and returns once each
// has built its Client (tracking up) and said "ready".
func startReadyChildren(t *testing.T, n int, spec string) []fleetChild {
	t.Helper()
	children := make([]fleetChild, n)
	for i := range children {
		_, in, out := startChild(t, spec)
		children[i] = fleetChild{in, out}
	}
	for i, ch := range children {
		if !ch.out.Scan() || ch.out.Text() != "ready" {
			t.Fatalf("child %d: %q", i, ch.out.Text())
		}
	}
	return children
}

// A process killed while it holds a key's lease blocks the key no longer
// than the lease's TTL (1 s here): a Client of this process waiting for it
// loads the key itself once the lease has expired.
func TestLeaseOfKilledProcessExpires(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	cmd, _, out := startChild(t, "hold "+srv.Addr()+" k")
	if !out.Scan() || out.Text() != "loading" {
		t.Fatalf("child: %q", out.Text())
	}
	c := newClient(t, Options{RedisURL: srv.URL(), L1MaxBytes: 1 << 20, Encryption: encConfig(""),
		Invalidation: &Invalidation{}, FleetSingleFlight: true, LeaseTTL: time.Second})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	v, err := GetOrLoad(bg, c, "k", func(context.Context) (string, error) { return "after", nil })
	took := time.Since(killed)
	if err != nil || v != "after" {
		t.Fatalf("%q, %v", v, err)
	}
	// The lease was renewed at most LeaseTTL/3 before the kill; Redis
	// expires it within about 100 ms of its TTL.
	if took > time.Second+300*time.Millisecond {
		t.Fatalf("the key loaded %v after its holder died, want within the 1 s lease", took)
	}
	if c.Stats().LeaseWaits == 0 {
		t.Fatal("the Client never waited for the dead process's lease")
	}
	t.Logf("loaded %v after the holder was killed", took)
}

// Six processes missing one cold key at once run one load, and each
// returns within the load's time and 100 ms.
func TestFleetSingleFlightAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv, raw := withRedis(t)
	children := startReadyChildren(t, 6, "fleet "+srv.Addr()+" cold")
	for _, ch := range children {
		_ = ch.stdin.Close()
	}
	var wg sync.WaitGroup
	took := make([]time.Duration, len(children))
	ended := make([]int64, len(children))
	var loaded atomic.Int64
	for i, ch := range children {
		wg.Go(func() {
			for ch.out.Scan() {
				f := strings.Fields(ch.out.Text())
				switch {
				case len(f) == 2 && f[0] == "loaded":
					n, _ := strconv.ParseInt(f[1], 10, 64)
					loaded.Store(n)
				case len(f) == 3 && f[0] == "took":
					us, _ := strconv.Atoi(f[1])
					took[i] = time.Duration(us) * time.Microsecond
					ended[i], _ = strconv.ParseInt(f[2], 10, 64)
				default:
					t.Errorf("child %d: %s", i, ch.out.Text())
				}
			}
		})
	}
	wg.Wait()
	if n, _ := raw.Get(bg, "cold:loads").Int(); n != 1 {
		t.Fatalf("%d loads across 6 processes, want 1", n)
	}
	// Each process is back within 100 ms of the load's end (woken by
	// invalidation), whichever process loaded.
	for i, e := range ended {
		if after := time.Duration(e-loaded.Load()) * time.Microsecond; e == 0 || after > 100*time.Millisecond {
			t.Errorf("process %d returned %v after the load ended, want at most 100ms", i, after)
		}
	}
	t.Logf("processes returned after %v", took)
}
