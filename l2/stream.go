package l2

// The auto-pipelined stream: the Store's single-key commands share one
// ordered stream of pipelines per server, go-redis's AutoPipeliner (its
// deferred face; on a cluster, a batcher per master: nodes.go), instead of
// taking a pooled connection each. The stream runs a batch on its own
// background context and calls only go-redis's hooks for the batch (the
// pipeline hook, or the process hook for a batch of one), so a caller
// waits for its reply (AutoFuture.WaitContext, or its batch's done
// channel): its ctx ends the wait, not the command.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/l2/internal/queued"
	"github.com/redis/go-redis/v9"
)

// ErrStreamRefused is returned by AutoPipeline when the client cannot give
// the Store an ordered stream: a *redis.Ring (go-redis has no pipeliner for
// it), a client type other than go-redis's, a client whose deferred
// pipeliner was already made unordered (AutoPipelineOptions.Unordered), or
// a cluster client whose AutoPipelineOptions are unordered or full-duplex.
var ErrStreamRefused = errors.New("l2: the client offers no ordered auto-pipeliner")

// stream is the Store's auto-pipelined stream to one server: go-redis's
// pipeliner (ap) on a single server, a batcher (b) for a cluster's master.
type stream struct {
	ap *redis.AutoPipeliner
	b  *batcher
	// maxBytes is the pipeliner's batch byte limit (MaxBatchBytes): a
	// value longer than it is sent, and a reply longer than it is read,
	// off the stream.
	maxBytes int
	// busy counts the calls on the stream, and those sent directly because
	// it was idle, until their send returns (on a cluster, the sends whose
	// commands all go to this master; not a redirect's resend).
	busy atomic.Int64
	// abandoned counts commands whose caller stopped waiting (its ctx
	// ended) that the stream has not run yet; a write sent off the stream
	// waits for them first (settle).
	abandoned atomic.Int64
	mu        sync.Mutex
	settled   chan struct{} // closed when abandoned drops to 0; under mu
	// queued drops the abandoned commands not yet dispatched.
	queued queued.Abandoned
}

// AutoPipeline makes the Store send its single-key commands (Get and the
// bounded reads, Set, Delete, Exists, TTL, Expire, SetCond, the lease and
// lock scripts, TryLock, Marker) on an ordered stream of pipelines,
// batched with every other caller's commands: on a *redis.Client its
// deferred AutoPipeliner (go-redis's AsyncAutoPipeline; its first caller's
// options, DefaultAutoPipelineOptions unless the client's Options set
// others); on a *redis.ClusterClient one stream per master (nodes.go,
// batcher.go), on the master's own node client, so that a master that
// does not answer holds its own commands only (reads go to the master
// too, whatever the client's ReadOnly routing says). Multi-key calls (MGet,
// MSet, FillMany, AcquireMany, SwapMany, scans, Unlink), publish and Ping
// keep their own pipelines. A value longer than the pipeliner's
// MaxBatchBytes is written off the stream, and a bounded read reads at
// most that many bytes on it, reading a longer value again off it, so no
// caller waits behind a large transfer.
//
// On the stream a caller's ctx ends its wait, and its command only if the
// command was still queued: one whose batch was already dispatched still
// runs, in its place in the stream, so it is not applied after a later
// command of this Store; one still queued when its batch is dispatched is
// dropped unsent (l2/internal/queued). A write sent off the stream (a large value, a
// multi-key write, a lone caller's) first waits, within its ctx, until
// every abandoned command of its server's stream has run or been dropped
// (a lone caller goes directly only when there is none). go-redis's hooks
// see a command on the stream's background context (no values of the
// caller's ctx), and a batch of several commands only through
// ProcessPipelineHook; on a cluster, the hooks of the master's node client
// (added through OnNewNode or ClusterOptions.NewClient), not the cluster
// client's own.
//
// ioTimeout, when positive, is the read and write timeout of the stream's
// batches (a WithTimeout clone of the client, or of each master's node
// client, sharing its pools): a batch stuck on a dead connection then
// fails after it, not after the client's own timeout, which may be sized
// for the largest value. 0 keeps the client's timeouts.
//
// Call it once, before the Store is used. It returns ErrStreamRefused, or
// the pipeliner's configuration error, and leaves the Store sending each
// command itself.
func (s *Store) AutoPipeline(ioTimeout time.Duration) error {
	if s.rdb == nil {
		return ErrStreamRefused
	}
	switch c := s.rdb.(type) {
	case *redis.Client:
	case *redis.ClusterClient:
		ns, err := newNodeStreams(c, ioTimeout)
		if err != nil {
			return err
		}
		s.nodes = ns
		return nil
	default:
		return ErrStreamRefused
	}
	src := s.rdb
	if c, ok := src.(*redis.Client); ok && ioTimeout > 0 {
		src = c.WithTimeout(ioTimeout)
	}
	ap, err := src.AsyncAutoPipeline()
	if err != nil {
		return err
	}
	cfg := ap.Config()
	if cfg.Unordered || cfg.MaxConcurrentBatches > 1 {
		return ErrStreamRefused
	}
	st := &stream{ap: ap, maxBytes: cfg.MaxBatchBytes}
	if st.maxBytes <= 0 {
		st.maxBytes = redis.DefaultAutoPipelineOptions().MaxBatchBytes
	}
	ap.AddHook(st.queued.Hook())
	s.stream = st
	return nil
}

func init() {
	seam.Install = func(store any, h seam.Hook) {
		s := store.(*Store)
		if h == nil {
			s.seam.Store(nil)
			return
		}
		s.seam.Store(&h)
	}
}

// send runs cmds in order and returns once each has its reply, or, on the
// stream, when ctx ends first: then it returns ctx's error, the commands
// run in their place or are dropped unsent, and the caller must not read
// them. On the
// stream each command is queued behind every command the Store queued
// before it (on a cluster, on its master's stream: the commands of one
// send for different masters run side by side, and one a master
// redirected runs again after the others; see sendCluster). Off it they go as one pipeline (one command alone) on ctx:
// without a stream; when large (the value longer than the stream's byte
// limit), after the abandoned commands of the stream ran; and when the
// caller is alone (no other send in flight, none abandoned), which is then
// the stream's order too. A command's own error is left on it.
func (s *Store) send(ctx context.Context, large bool, cmds ...redis.Cmder) error {
	var hook seam.Hook
	if p := s.seam.Load(); p != nil {
		hook = *p
		for _, c := range cmds {
			hook.Before(c)
		}
	}
	st := s.stream
	switch {
	case s.nodes != nil:
		busy, err := s.sendCluster(ctx, large, cmds)
		if busy != nil {
			defer busy.busy.Add(-1)
		}
		if err != nil {
			return err
		}
	case st == nil:
		s.direct(ctx, s.once(cmds, false))
	case large:
		if err := st.settle(ctx); err != nil {
			return err
		}
		s.direct(ctx, s.once(cmds, false))
	default:
		// A lone caller (nothing else in flight, nothing abandoned) sends
		// directly: the pipeliner's hand-off costs it more than it saves.
		defer st.busy.Add(-1)
		if st.busy.Add(1) == 1 && st.abandoned.Load() == 0 {
			s.direct(ctx, s.once(cmds, false))
		} else if err := st.run(ctx, s.once(cmds, true)); err != nil {
			return err
		}
	}
	if hook != nil {
		for _, c := range cmds {
			hook.After(c)
		}
	}
	return nil
}

// direct sends cmds on ctx: one command alone, several as one pipeline;
// on a cluster this Store's announcements go to their keys' masters.
func (s *Store) direct(ctx context.Context, cmds []redis.Cmder) {
	if s.cluster != nil && s.channel != "" {
		s.directCluster(ctx, cmds)
		return
	}
	s.directAll(ctx, cmds)
}

// directAll sends cmds on ctx through the client as they are.
func (s *Store) directAll(ctx context.Context, cmds []redis.Cmder) {
	if len(cmds) == 1 {
		_ = s.rdb.Process(ctx, cmds[0])
		return
	}
	own := append([]redis.Cmder(nil), cmds...) // so cmds stays on the caller's stack
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range own {
			_ = p.Process(ctx, c)
		}
		return nil
	})
}

// settle waits, within ctx, until the stream ran every command whose
// caller stopped waiting, so that a write of keys sent off the stream
// cannot be overtaken by an earlier one of this Store: on a cluster, the
// streams of keys' masters. A Store without a stream has nothing to wait
// for.
func (s *Store) settle(ctx context.Context, keys ...string) error {
	switch {
	case s.nodes != nil:
		return s.nodes.settle(ctx, keys)
	case s.stream == nil:
		return nil
	}
	return s.stream.settle(ctx)
}

// run queues cmds on the stream and waits for their replies within ctx.
func (st *stream) run(ctx context.Context, cmds []redis.Cmder) error {
	if st.b != nil {
		bd := st.b.submit(cmds)
		select {
		case <-bd.done:
			return nil
		case <-ctx.Done():
			st.abandonBatch(cmds, bd)
			return ctx.Err()
		}
	}
	var buf [4]redis.AutoFuture
	futs := buf[:0]
	for _, c := range cmds {
		futs = append(futs, st.ap.Submit(ctx, c))
	}
	for i := range futs {
		if err := futs[i].WaitContext(ctx); err != nil && err == ctx.Err() {
			st.abandon(cmds[i:], futs[i:])
			return err
		}
	}
	return nil
}

// abandon counts futs (the futures of cmds) as abandoned until each has
// run or was dropped unsent.
func (st *stream) abandon(cmds []redis.Cmder, futs []redis.AutoFuture) {
	own := append([]redis.AutoFuture(nil), futs...)
	st.abandonUntil(cmds, func() {
		for _, f := range own {
			_ = f.Wait()
		}
	})
}

// abandonBatch counts cmds, queued on the batcher with bd, as abandoned
// until their batch ran.
func (st *stream) abandonBatch(cmds []redis.Cmder, bd *batchDone) {
	st.abandonUntil(cmds, func() { <-bd.done })
}

// abandonUntil marks cmds as abandoned (dropped if not yet sent) and
// counts them until wait returns (each has run or was dropped).
func (st *stream) abandonUntil(cmds []redis.Cmder, wait func()) {
	n := int64(len(cmds))
	st.mu.Lock()
	if st.abandoned.Add(n) == n {
		st.settled = make(chan struct{})
	}
	st.mu.Unlock()
	marked := append([]redis.Cmder(nil), cmds...)
	st.queued.Mark(marked)
	go func() {
		wait()
		st.queued.Unmark(marked) // those sent before they were abandoned
		st.mu.Lock()
		if st.abandoned.Add(-n) == 0 {
			close(st.settled)
		}
		st.mu.Unlock()
	}()
}

// settle waits, within ctx, until no abandoned command is left.
func (st *stream) settle(ctx context.Context) error {
	if st.abandoned.Load() == 0 {
		return nil
	}
	st.mu.Lock()
	if st.abandoned.Load() == 0 {
		st.mu.Unlock()
		return nil
	}
	ch := st.settled
	st.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// scriptCmd builds a script's command without sending it: EVALSHA, or EVAL
// with the script's source.
type scriptCmd struct{ redis.Scripter }

func (scriptCmd) Eval(ctx context.Context, src string, keys []string, args ...any) *redis.Cmd {
	return evalCmd(ctx, "eval", src, keys, args)
}

func (scriptCmd) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return evalCmd(ctx, "evalsha", sha, keys, args)
}

// evalCmd is name body numkeys keys... args..., as go-redis lays EVAL out.
func evalCmd(ctx context.Context, name, body string, keys []string, args []any) *redis.Cmd {
	a := make([]any, 0, 3+len(keys)+len(args))
	a = append(a, name, body, len(keys))
	for _, k := range keys {
		a = append(a, k)
	}
	return redis.NewCmd(ctx, append(a, args...)...)
}

// script runs a one-key script through send (EVALSHA) and returns its
// command, or send's error. A server without the script (a restart, SCRIPT
// FLUSH) answers NOSCRIPT, which runs nothing: the script is then loaded
// (SCRIPT LOAD, on the key's node) and EVALSHA sent again. A large call
// loads the script first, so that its value crosses the network once even
// on a server that lost its scripts: its caller's transfer allowance is
// for one send. A call is large when it goes off the stream (large) or
// its arguments carry more than LongRead bytes (with or without a stream).
func (s *Store) script(ctx context.Context, large bool, sc *redis.Script, key string, args ...any) (*redis.Cmd, error) {
	keys := []string{key}
	if large || argBytes(args) > LongRead {
		if err := s.loadScript(ctx, large, sc, key); err != nil {
			return nil, err
		}
	}
	cmd := sc.EvalSha(ctx, scriptCmd{}, keys, args...)
	if err := s.send(ctx, large, cmd); err != nil {
		return nil, err
	}
	if err := cmd.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := s.loadScript(ctx, large, sc, key); err != nil {
			return nil, err
		}
		cmd = sc.EvalSha(ctx, scriptCmd{}, keys, args...)
		if err := s.send(ctx, large, cmd); err != nil {
			return nil, err
		}
	}
	return cmd, nil
}

// loadScript loads sc on the node that serves key (SCRIPT LOAD): through
// send on one server, on the key's master of a cluster.
func (s *Store) loadScript(ctx context.Context, large bool, sc *redis.Script, key string) error {
	if s.cluster != nil {
		node, err := s.cluster.MasterForKey(ctx, key)
		if err != nil {
			return err
		}
		return sc.Load(ctx, node).Err()
	}
	cmd := sc.Load(ctx, scriptLoader{})
	if err := s.send(ctx, large, cmd); err != nil {
		return err
	}
	return cmd.Err()
}

// argBytes is the number of bytes args carry as strings and byte slices.
func argBytes(args []any) int {
	n := 0
	for _, a := range args {
		switch v := a.(type) {
		case []byte:
			n += len(v)
		case string:
			n += len(v)
		}
	}
	return n
}

// scriptLoader builds SCRIPT LOAD without sending it.
type scriptLoader struct{ redis.Scripter }

func (scriptLoader) ScriptLoad(ctx context.Context, src string) *redis.StringCmd {
	return redis.NewStringCmd(ctx, "script", "load", src)
}

// large reports whether n bytes of value are too many for the stream.
func (s *Store) large(n int) bool {
	max := s.streamBytes()
	return max > 0 && n > max
}

// streamBytes is the stream's batch byte limit, 0 without a stream.
func (s *Store) streamBytes() int {
	switch {
	case s.nodes != nil:
		return s.nodes.maxBytes
	case s.stream != nil:
		return s.stream.maxBytes
	}
	return 0
}
