package redistest

import (
	"context"
	"fmt"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Hold is a go-redis hook that holds back the reply of one command (or of
// one pipeline containing it) after Redis has executed it, until Release:
// the caller sees its command still in flight while Redis already applied
// it. Only the first command that matches is held; every other passes.
//
//	h := redistest.NewHold("set", "k")
//	rdb.AddHook(h)
//	go client.Set(ctx, "k", "a") // Redis holds "a"; Set does not return
//	<-h.Held()
//	... race something against the held Set ...
//	h.Release()
type Hold struct {
	name, key string
	before    bool // hold before the command is sent instead of after
	namer     func(redis.Cmder) (name, key string)
	once      sync.Once
	armed     chan struct{} // holds one token until a command takes it
	held      chan struct{}
	release   chan struct{}
	// seamed holds the commands h saw as an l2.Seam: its go-redis hooks
	// leave them alone, so a command on the auto-pipelined stream is held
	// on its caller's goroutine, not in the batch it shares with others.
	seamed sync.Map
}

// NewHold returns a Hold for the first command named name (lower case, as
// go-redis names commands, or as the function given to Named names them)
// whose first argument is key.
func NewHold(name, key string) *Hold {
	h := &Hold{name: name, key: key, armed: make(chan struct{}, 1), held: make(chan struct{}), release: make(chan struct{})}
	h.armed <- struct{}{}
	return h
}

// NewHoldBefore returns a Hold that holds the first matching command
// before it is sent: the caller has started it, Redis has not seen it.
func NewHoldBefore(name, key string) *Hold {
	h := NewHold(name, key)
	h.before = true
	return h
}

// Held is closed once a matching command is being held.
func (h *Hold) Held() <-chan struct{} { return h.held }

// Release lets the held reply (and any later match) through. It is
// idempotent.
func (h *Hold) Release() { h.once.Do(func() { close(h.release) }) }

func (h *Hold) matches(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if err := c.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue // go-redis sends the script again with EVAL
		}
		if name, key := h.names(c); name == h.name && key == h.key {
			return true
		}
	}
	return false
}

// hold blocks when cmds match and the Hold is still armed.
func (h *Hold) hold(cmds []redis.Cmder) {
	var mine []redis.Cmder
	for _, c := range cmds {
		if _, ok := h.seamed.Load(c); !ok {
			mine = append(mine, c)
		}
	}
	h.holdSeam(mine)
}

// holdSeam is hold without the filter of commands seen as a Seam.
func (h *Hold) holdSeam(cmds []redis.Cmder) {
	if !h.matches(cmds) {
		return
	}
	select {
	case <-h.armed:
	default:
		return
	}
	close(h.held)
	<-h.release
}

// Named makes h name commands with names (seam.CommandName: scripts by what
// they do, with their first key) instead of go-redis's name and first
// argument. It returns h.
func (h *Hold) Named(names func(redis.Cmder) (name, key string)) *Hold {
	h.namer = names
	return h
}

// names is the name and key h matches cmd by.
func (h *Hold) names(cmd redis.Cmder) (string, string) {
	if h.namer != nil {
		return h.namer(cmd)
	}
	if args := cmd.Args(); len(args) > 1 {
		return cmd.Name(), fmt.Sprint(args[1])
	}
	return cmd.Name(), ""
}

// Before implements seam.Hook (install it with seam.Install, beside or
// instead of AddHook): a Hold made by NewHoldBefore holds the caller of
// the matching command here, before the command is queued or sent.
func (h *Hold) Before(cmd redis.Cmder) {
	h.seamed.Store(cmd, struct{}{})
	if h.before {
		h.holdSeam([]redis.Cmder{cmd})
	}
}

// After implements l2.Seam: a Hold made by NewHold holds the caller of the
// matching command here, once Redis answered it. Only that caller waits:
// the auto-pipelined stream, and every other command, go on.
func (h *Hold) After(cmd redis.Cmder) {
	if !h.before {
		h.holdSeam([]redis.Cmder{cmd})
	}
	h.seamed.Delete(cmd)
}

// DialHook implements redis.Hook.
func (h *Hold) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return next(ctx, network, addr) }
}

// ProcessHook implements redis.Hook.
func (h *Hold) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.before {
			h.hold([]redis.Cmder{cmd})
		}
		err := next(ctx, cmd)
		if !h.before {
			h.hold([]redis.Cmder{cmd})
		}
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h *Hold) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.before {
			h.hold(cmds)
		}
		err := next(ctx, cmds)
		if !h.before {
			h.hold(cmds)
		}
		return err
	}
}
