// Package queued drops, unsent, the commands of an l2.Store's
// auto-pipelined stream whose callers stopped waiting before their batch
// was dispatched.
//
// Such a command would otherwise run long after its caller was told the
// outcome was open (a stream held by a fence or a dead connection), over
// writes other processes made since. Dropped, it is not applied at all,
// which its caller's error allows, and the commands behind it keep their
// order. A command already handed to go-redis is not touched: it runs in
// its place.
package queued

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// ErrAbandoned is the error of a command dropped unsent.
var ErrAbandoned = errors.New("l2: not sent: its caller stopped waiting before its batch was sent")

// Abandoned is the set of commands whose callers stopped waiting, not yet
// dispatched. The zero value is empty and ready.
type Abandoned struct {
	m sync.Map // redis.Cmder -> struct{}
	n atomic.Int64
}

// Mark adds cmds, which their caller stopped waiting for.
func (a *Abandoned) Mark(cmds []redis.Cmder) {
	a.n.Add(int64(len(cmds)))
	for _, c := range cmds {
		a.m.Store(c, struct{}{})
	}
}

// Unmark removes cmds once each ran or was dropped.
func (a *Abandoned) Unmark(cmds []redis.Cmder) {
	for _, c := range cmds {
		if _, ok := a.m.LoadAndDelete(c); ok {
			a.n.Add(-1)
		}
	}
}

// drop reports whether cmd is in the set, and if so removes it and gives
// it ErrAbandoned.
func (a *Abandoned) drop(cmd redis.Cmder) bool {
	if a.n.Load() == 0 {
		return false
	}
	if _, ok := a.m.LoadAndDelete(cmd); !ok {
		return false
	}
	a.n.Add(-1)
	cmd.SetErr(ErrAbandoned)
	return true
}

// Hook returns the go-redis hook of the stream's pipeliner that drops the
// set's commands from every batch (and a batch of one) it dispatches.
func (a *Abandoned) Hook() redis.Hook { return hook{a} }

type hook struct{ a *Abandoned }

// DialHook implements redis.Hook.
func (hook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook (a batch of one).
func (h hook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.a.drop(cmd) {
			return ErrAbandoned
		}
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h hook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.a.n.Load() == 0 {
			return next(ctx, cmds)
		}
		var kept []redis.Cmder
		for i, c := range cmds {
			if !h.a.drop(c) {
				if kept != nil {
					kept = append(kept, c)
				}
				continue
			}
			if kept == nil {
				kept = append(make([]redis.Cmder, 0, len(cmds)), cmds[:i]...)
			}
		}
		switch {
		case kept == nil:
			return next(ctx, cmds)
		case len(kept) == 0:
			return nil // each command carries ErrAbandoned
		}
		return next(ctx, kept)
	}
}
