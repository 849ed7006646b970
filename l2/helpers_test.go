package l2

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/redis/go-redis/v9"
)

var bg = context.Background()

// roundTrips counts what go-redis sends: single commands and pipelines.
// It also records the arguments of the last single command. Commands that
// go-redis sends on its own when it opens a connection (HELLO, CLIENT
// SETINFO) pass through the hooks too and are not counted.
type roundTrips struct {
	process  atomic.Int64
	pipeline atomic.Int64

	mu   sync.Mutex
	last []any
}

func (h *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if connInit(cmd) {
			return next(ctx, cmd)
		}
		h.process.Add(1)
		h.mu.Lock()
		h.last = cmd.Args()
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && connInit(cmds[0]) {
			return next(ctx, cmds)
		}
		h.pipeline.Add(1)
		h.mu.Lock()
		h.last = cmds[0].Args()
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func connInit(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

func (h *roundTrips) reset() { h.process.Store(0); h.pipeline.Store(0) }

// want fails unless exactly the given numbers of single commands and
// pipelines went out since the last reset.
func (h *roundTrips) want(tb testing.TB, process, pipeline int64) {
	tb.Helper()
	if p, q := h.process.Load(), h.pipeline.Load(); p != process || q != pipeline {
		tb.Fatalf("sent %d commands and %d pipelines, want %d and %d", p, q, process, pipeline)
	}
}

func (h *roundTrips) lastArgs() []any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last
}

type fixture struct {
	srv   *redistest.Server
	rdb   *redis.Client
	store *Store
	hook  *roundTrips
}

// setup starts a private redis-server and a Store on it.
func setup(tb testing.TB) *fixture {
	tb.Helper()
	srv := redistest.Start(tb)
	rdb := redis.NewClient(&redis.Options{
		Addr:        srv.Addr(),
		MaxRetries:  1,
		DialTimeout: time.Second,
		// Fail fast while the server is down (the default retries five
		// dials per command).
		DialerRetries:      1,
		DialerRetryTimeout: 10 * time.Millisecond,
	})
	tb.Cleanup(func() { _ = rdb.Close() })
	if err := rdb.Ping(bg).Err(); err != nil {
		tb.Fatalf("ping: %v", err)
	}
	h := &roundTrips{}
	rdb.AddHook(h)
	return &fixture{srv: srv, rdb: rdb, store: New(rdb), hook: h}
}

// allBytes is a value holding every byte value, twice.
func allBytes() []byte {
	b := make([]byte, 512)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

// noKeyIn fails when an error message mentions any of keys.
func noKeyIn(tb testing.TB, err error, keys ...string) {
	tb.Helper()
	for _, k := range keys {
		if strings.Contains(err.Error(), k) {
			tb.Fatalf("error message contains a cache key")
		}
	}
}

// asBackend unwraps a *BackendError from err.
func asBackend(err error) (*BackendError, bool) {
	var be *BackendError
	ok := errors.As(err, &be)
	return be, ok
}

// unusedAddr returns a loopback address nothing listens on.
func unusedAddr(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
