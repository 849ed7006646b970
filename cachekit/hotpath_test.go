package cachekit

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// The Client builds its AAD from a template validated in New. These tests
// hold it to what the per-call builder produced before: the same bytes for
// every key shape, and, for components that were invalid, the same error on
// every operation rather than a failure in New.

// TestClientAADMatchesPerCallBuilder: the one AAD the Client builds for a
// key, from its configured tenant, prefix, format and compressed flag, is
// protocol.AppendAADKey's for every prefix, tenant and container: a reader
// that rebuilds its AAD from configuration, with no alternative to retry
// (ENC-1).
func TestClientAADMatchesPerCallBuilder(t *testing.T) {
	t.Parallel()
	keys := []string{"k", "user:12345", "ключ", "a b\tc", string(bytes.Repeat([]byte("x"), 300))}
	for _, prefix := range []string{"", "app:", "τ/"} {
		for _, tenant := range []string{"", "acme"} {
			for _, disable := range []bool{false, true} {
				c := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: prefix, Encryption: encConfig(tenant), DisableCompression: disable})
				wantTenant := tenant
				if wantTenant == "" {
					wantTenant = "default"
				}
				for _, key := range append(keys, "", "\xff") {
					s := getScratch()
					got, gerr := c.appendAAD(s, key)
					want, werr := protocol.AppendAADKey(nil, wantTenant, prefix, key, protocol.FormatMsgpack, !disable)
					if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
						t.Fatalf("prefix %q tenant %q: error %v, want %v", prefix, tenant, gerr, werr)
					}
					if gerr == nil && !bytes.Equal(got, want) {
						t.Fatalf("prefix %q tenant %q: AAD differs from AppendAADKey", prefix, tenant)
					}
					putScratch(s)
				}
			}
		}
	}
}

func TestClientInvalidPrefixFailsEveryEncryptedOp(t *testing.T) {
	t.Parallel()
	c := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: "\xffp:", Encryption: encConfig("")})
	_, want := protocol.AppendAADKey(nil, "default", "\xffp:", "k", protocol.FormatMsgpack, true)
	if want == nil {
		t.Fatal("reference builder accepted an invalid prefix")
	}
	for i := 0; i < 3; i++ {
		err := c.Set(bg, "k", []byte("v"))
		if err == nil || err.Error() != want.Error() || !errors.Is(err, protocol.ErrMalformed) {
			t.Fatalf("Set #%d: %v, want %v", i, err, want)
		}
	}
	// Without encryption no AAD is built: the prefix is only a Redis key part.
	p := newClient(t, Options{L1MaxBytes: 1 << 20, KeyPrefix: "\xffp:"})
	if err := p.Set(bg, "k", []byte("v")); err != nil {
		t.Fatalf("plain client: %v", err)
	}
}

// cmdRecorder is a go-redis hook that records the round trips a Client
// makes: the names of the commands each carried (a command alone, or a
// pipeline), leaving out the handshake (HELLO, CLIENT, AUTH, SELECT) of a
// newly dialled connection.
type cmdRecorder struct {
	mu    sync.Mutex
	trips [][]string
}

func (r *cmdRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.add(cmd)
		return next(ctx, cmd)
	}
}
func (r *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.add(cmds...)
		return next(ctx, cmds)
	}
}

func (r *cmdRecorder) add(cmds ...redis.Cmder) {
	var trip []string
	for _, c := range cmds {
		switch n := c.Name(); n {
		case "hello", "client", "auth", "select":
		default:
			trip = append(trip, n)
		}
	}
	if len(trip) > 0 {
		r.mu.Lock()
		r.trips = append(r.trips, trip)
		r.mu.Unlock()
	}
}

// take returns the data commands recorded since the last take or
// takeTrips, in order.
func (r *cmdRecorder) take() []string {
	return strings.FieldsFunc(r.takeTrips(), func(c rune) bool { return c == '+' || c == '|' || c == ' ' })
}

// takeTrips returns the round trips recorded since the last take, each as
// its commands' names joined by "+", joined by " | ".
func (r *cmdRecorder) takeTrips() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.trips))
	for i, t := range r.trips {
		out[i] = strings.Join(t, "+")
	}
	r.trips = nil
	return strings.Join(out, " | ")
}

// A read from Redis asks for the remaining TTL only when it will backfill L1.
func TestL2ReadSendsPTTLOnlyForL1Backfill(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	rec := &cmdRecorder{}
	rdb.AddHook(rec)
	for _, withL1 := range []bool{false, true} {
		opts := Options{Redis: rdb, Encryption: encConfig("")}
		if withL1 {
			opts.L1MaxBytes = 1 << 20
		}
		c := newClient(t, opts)
		mustSet(t, c, "k", "v")
		if withL1 {
			c.l1.Delete("k")
		}
		rec.take()
		if v, err := Get[string](bg, c, "k"); err != nil || v != "v" {
			t.Fatalf("get: %q %v", v, err)
		}
		got := strings.Join(rec.take(), ",")
		want := map[bool]string{false: "getrange", true: "getrange,pttl"}[withL1]
		if got != want {
			t.Errorf("L1 %v: sent %q, want %q", withL1, got, want)
		}
	}
}

// Scratch buffers held decrypted bytes: putScratch wipes them, also when
// they are too large to pool and go to the garbage collector instead.
// No plaintext outlives the call in a reused buffer (PRE-11).
func TestPutScratchWipesDecryptedBytes(t *testing.T) {
	// Not parallel: reads buffers it has put back in the package-wide scratch pool, which a parallel test could take and fill.
	for _, size := range []int{64, maxPooled + 1} {
		s := &scratch{plain: bytes.Repeat([]byte{0xAA}, size), value: bytes.Repeat([]byte{0xBB}, size)}
		plain, value := s.plain, s.value
		putScratch(s)
		if bytes.IndexByte(plain, 0xAA) >= 0 || bytes.IndexByte(value, 0xBB) >= 0 {
			t.Errorf("size %d: scratch still holds the decrypted bytes after putScratch", size)
		}
	}
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
	log := &cmdRecorder{}
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
	log.takeTrips()
	for _, s := range steps {
		if err := s.run(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := log.takeTrips(); got != s.want {
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
		log.takeTrips()
		loads := w.Stats().Loads
		waitWithin(t, 5*time.Second, func() bool {
			_, _ = GetOrLoadTTL(bg, w, k, swrTTL, load)
			return w.Stats().Loads > loads
		})
		waitWithin(t, 5*time.Second, w.swrIdle)
	}
	// The reads that found it due, then the refresh: its PEXPIRETIME
	// (with the lease probe), then the compare-and-set, then more reads.
	if trips := log.takeTrips(); !strings.Contains(trips, "getrange+pttl | pexpiretime+strlen+getrange | evalsha") {
		t.Errorf("SWR reads and refresh sent %q, want getrange+pttl | pexpiretime+strlen+getrange | evalsha among them", trips)
	}
}
