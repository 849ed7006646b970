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

// eachDone reads evalEach's commands as stored reads them: done[i] and
// errs[i] per item; a refusal before any command (cmds nil, err) is every
// item's error. The items stored whose PUBLISH Redis refused (keyOf names
// their keys) go to announceFailed together, as one failure of op.
func (s *Store) eachDone(op string, n int, cmds []*redis.Cmd, err error, keyOf func(i int) string) (done []bool, errs []error) {
	done, errs = make([]bool, n), make([]error, n)
	var unheard []string
	var why error
	for i := range errs {
		if cmds == nil {
			errs[i] = err
			continue
		}
		ok, perr, cerr := storedReply(cmds[i])
		if cerr != nil {
			errs[i] = fail(op, cerr)
			continue
		}
		if perr != nil {
			unheard = append(unheard, keyOf(i))
			if why == nil {
				why = perr
			}
		}
		done[i] = ok
	}
	if unheard != nil {
		_ = s.announceFailed(op, unheard, why)
	}
	return done, errs
}

// runDone runs a one-key script (EVALSHA, then EVAL if the server lacks
// it; large: off the stream) that replies as stored reads it, and reports
// whether it did its work.
func (s *Store) runDone(ctx context.Context, op string, large bool, script *redis.Script, key string, args ...any) (bool, error) {
	if err := s.check(op); err != nil {
		return false, err
	}
	cmd, err := s.script(ctx, large, script, key, args...)
	if err != nil {
		return false, fail(op, err)
	}
	return s.stored(op, key, cmd)
}

// stored reads the reply of a script that wrote key and announced it
// (publish): whether it did its work; a refused PUBLISH goes to
// announceFailed (the write's outcome is the write's). A reply error is
// returned as op's.
func (s *Store) stored(op, key string, cmd *redis.Cmd) (bool, error) {
	ok, perr, err := storedReply(cmd)
	if err != nil {
		return false, fail(op, err)
	}
	if perr != nil {
		_ = s.announceFailed(op, []string{key}, perr)
	}
	return ok, nil
}

// storedReply reads a script's "did its work" reply: 1 yes, any other
// number no, {1, error} yes with its PUBLISH refused (pub). err is the
// reply's own error, or errUnexpectedReply for another shape.
func storedReply(cmd *redis.Cmd) (ok bool, pub, err error) {
	v, err := cmd.Result()
	if err != nil {
		return false, nil, err
	}
	switch r := v.(type) {
	case int64:
		return r == 1, nil, nil
	case []any:
		if len(r) == 2 && r[0] == int64(1) {
			if msg, isText := r[1].(string); isText {
				return true, scriptError(msg), nil
			}
		}
	}
	return false, nil, errUnexpectedReply
}

// scriptError is an error reply a script caught (redis.pcall) and handed
// back as text: a redis.Error, so that refusedReply reads it as it reads
// the same reply to a command.
type scriptError string

func (e scriptError) Error() string { return string(e) }

// RedisError marks scriptError as a Redis reply (redis.Error).
func (scriptError) RedisError() {}
