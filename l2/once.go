package l2

// Commands go-redis must not resend. A client built with MaxRetries > 0
// (go-redis's default is 3) sends a command again after a network error,
// a reply it timed out on included: a write whose first send may have
// landed would then land twice, perhaps after another process's write
// (ErrOutcomeUnknown is the caller's to settle; rule: a write takes effect
// once). go-redis honours a command's NoRetry for single commands and for
// a pipeline holding one; its auto-pipeliner splits a batch whose
// commands differ in it into several pipelines, so on the stream every
// command is marked, keeping batches whole (reads then retry only in the
// Client's own stack, one retry layer).

import (
	"github.com/redis/go-redis/v9"
)

// The marks: a command of each type the Store sends, embedded by pointer
// so that the mark costs no allocation.
type (
	onceStatus struct{ *redis.StatusCmd }
	onceInt    struct{ *redis.IntCmd }
	onceCmd    struct{ *redis.Cmd }
	onceString struct{ *redis.StringCmd }
	onceDur    struct{ *redis.DurationCmd }
	onceAny    struct{ redis.Cmder } // any other type (one allocation)
)

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceStatus) NoRetry() bool { return true }

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceInt) NoRetry() bool { return true }

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceCmd) NoRetry() bool { return true }

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceString) NoRetry() bool { return true }

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceDur) NoRetry() bool { return true }

// NoRetry implements redis.Cmder: never resent by go-redis.
func (onceAny) NoRetry() bool { return true }

// mark returns cmd marked as go-redis must not resend.
func mark(cmd redis.Cmder) redis.Cmder {
	switch c := cmd.(type) {
	case *redis.StatusCmd:
		return onceStatus{c}
	case *redis.IntCmd:
		return onceInt{c}
	case *redis.Cmd:
		return onceCmd{c}
	case *redis.StringCmd:
		return onceString{c}
	case *redis.DurationCmd:
		return onceDur{c}
	}
	return onceAny{cmd}
}

// once returns cmds marked as go-redis must not resend, when the client
// resends on its own: every command when all is set (a batch for the
// stream), else the writes. Otherwise, and when nothing needs the mark,
// it returns cmds itself; a single command is marked in place (cmds is
// the caller's own variadic slice, read no more after the send).
func (s *Store) once(cmds []redis.Cmder, all bool) []redis.Cmder {
	if !s.resends {
		return cmds
	}
	if len(cmds) == 1 {
		if all || writes(cmds[0]) {
			cmds[0] = mark(cmds[0])
		}
		return cmds
	}
	var out []redis.Cmder
	for i, c := range cmds {
		if !all && !writes(c) {
			continue
		}
		if out == nil {
			out = append(make([]redis.Cmder, 0, len(cmds)), cmds...)
		}
		out[i] = mark(c)
	}
	if out == nil {
		return cmds
	}
	return out
}

// writes reports whether cmd may change what Redis holds: SET, DEL,
// UNLINK, PEXPIRE and the scripts.
func writes(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "set", "del", "unlink", "pexpire", "evalsha", "eval":
		return true
	}
	return false
}
