package l2

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// evalEach runs script once per item, all in one pipeline off the
// auto-pipelined stream (after what it still holds for callers that stopped
// waiting), sent with EVAL
// (no script cache needed; one node of a cluster takes keys of different
// slots, each command routed by its key). args(i) gives item i's key and
// arguments. It returns each item's command, or nil and the error the Store
// reports before touching Redis.
func (s *Store) evalEach(ctx context.Context, op string, script *redis.Script, n int, args func(i int) (string, []any)) ([]*redis.Cmd, error) {
	if err := s.check(op); err != nil {
		return nil, err
	}
	cmds := make([]*redis.Cmd, n)
	sent := make([]redis.Cmder, n)
	var keys []string // on a cluster, to settle their masters' streams
	if s.nodes != nil {
		keys = make([]string, n)
	}
	for i := range n {
		key, argv := args(i)
		if keys != nil {
			keys[i] = key
		}
		cmds[i] = script.Eval(ctx, scriptCmd{}, []string{key}, argv...)
		sent[i] = cmds[i]
	}
	if err := s.settle(ctx, keys...); err != nil {
		return nil, fail(op, err)
	}
	sent = s.once(sent, false)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range sent {
			_ = p.Process(ctx, c)
		}
		return nil
	})
	return cmds, nil
}

// eachDone reads evalEach's commands as "1 means done": done[i] and
// errs[i] per item; a refusal before any command (cmds nil, err) is every
// item's error.
func eachDone(op string, n int, cmds []*redis.Cmd, err error) (done []bool, errs []error) {
	done, errs = make([]bool, n), make([]error, n)
	for i := range errs {
		if cmds == nil {
			errs[i] = err
			continue
		}
		v, cerr := cmds[i].Int64()
		if cerr != nil {
			errs[i] = fail(op, cerr)
			continue
		}
		done[i] = v == 1
	}
	return done, errs
}

// runDone runs a one-key script (EVALSHA, then EVAL if the server lacks
// it; large: off the stream) that replies 1 when it did its work, and
// reports whether it did.
func (s *Store) runDone(ctx context.Context, op string, large bool, script *redis.Script, key string, args ...any) (bool, error) {
	if err := s.check(op); err != nil {
		return false, err
	}
	cmd, err := s.script(ctx, large, script, key, args...)
	if err != nil {
		return false, fail(op, err)
	}
	n, err := cmd.Int64()
	if err != nil {
		return false, fail(op, err)
	}
	return n == 1, nil
}
