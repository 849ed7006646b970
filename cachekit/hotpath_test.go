package cachekit

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

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

// cmdRecorder is a go-redis hook that records the names of the commands sent.
type cmdRecorder struct {
	mu    sync.Mutex
	names []string
}

func (r *cmdRecorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *cmdRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		r.names = append(r.names, cmd.Name())
		r.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (r *cmdRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.mu.Lock()
		for _, c := range cmds {
			r.names = append(r.names, c.Name())
		}
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

// take returns the data commands recorded since the last call, leaving out
// the handshake (HELLO, CLIENT) of a newly dialled connection.
func (r *cmdRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, n := range r.names {
		if n != "hello" && n != "client" {
			out = append(out, n)
		}
	}
	r.names = nil
	return out
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
