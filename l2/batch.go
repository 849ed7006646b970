package l2

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/chunked"
)

// Item is one entry of an MSet.
type Item struct {
	Key   string
	Value []byte
	TTL   time.Duration // must be positive
}

// MGet returns the values of keys in key order, nil for a missing key. On a
// standalone client it sends one MGET (with the EXISTS below, pipelined).
// On a cluster client it groups the keys by hash slot and sends one MGET
// (and one EXISTS) per slot, all in one pipeline.
// The returned slices are fresh allocations owned by the caller. An empty
// keys slice returns an empty result without a round trip.
//
// A key holding another Redis type (a list, a hash...), which MGET reports
// as missing, is told apart from a missing key: an EXISTS of the same keys
// rides in the same pipeline, and only when it counts more keys than MGET
// returned values does a second round trip ask the TYPE of the keys read
// as missing. MGet then returns the values it did read together with a
// *WrongTypeError naming those keys. On a cluster client, when the
// commands of some slots fail and others answer, MGet returns the values it
// read with a *PartialError naming the keys it could not read.
func (s *Store) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if err := s.check("mget"); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	// One part on a standalone client (idx nil: the keys in order), one
	// per hash slot on a cluster.
	var groups []slotGroup
	if s.cluster != nil {
		groups = groupBySlot(keys)
	}
	parts := max(len(groups), 1)
	mgets := make([]*redis.SliceCmd, parts)
	exists := make([]*redis.IntCmd, parts)
	idx := make([][]int, parts)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range parts {
			part := keys
			if groups != nil {
				part, idx[i] = groups[i].pick(keys), groups[i].idx
			}
			mgets[i] = p.MGet(ctx, part...)
			// EXISTS reuses MGET's boxed keys: one slice, not one
			// allocation per key.
			args := mgets[i].Args()
			exists[i] = redis.NewIntCmd(ctx, append(append(make([]any, 0, len(args)), "exists"), args[1:]...)...)
			_ = p.Process(ctx, exists[i])
		}
		return nil
	})
	counted := int64(0)
	var failed partial
	for i, c := range mgets {
		vals, err := c.Result()
		if groups != nil {
			vals, err = answered(vals, err)
		}
		if err == nil {
			err = fill(out, vals, idx[i])
		}
		var n int64
		if err == nil {
			n, err = exists[i].Result()
			if groups != nil && err != nil && isCtxErr(err) {
				n, err = 0, nil // the values were read; only the type check of this slot is skipped
			}
		}
		if err != nil {
			if isReplyShape(err) {
				return nil, err
			}
			if groups == nil || errors.Is(err, redis.Nil) {
				return nil, fail("mget", err)
			}
			failed.add(out, idx[i], err)
			continue
		}
		counted += n
	}
	if failed.err != nil {
		return out, failed.result()
	}
	var maybe []int
	if counted > int64(len(out)-countNil(out)) {
		for i, v := range out {
			if v == nil {
				maybe = append(maybe, i)
			}
		}
	}
	out, err := typeChecked(out, s.checkTypes(ctx, keys, maybe))
	dropLeases(out)
	return out, err
}

// typeChecked is what MGet returns after checkTypes: the values alone,
// the values with a *WrongTypeError, or nil and any other error.
func typeChecked(out [][]byte, err error) ([][]byte, error) {
	var wt *WrongTypeError
	if err != nil && !errors.As(err, &wt) {
		return nil, err
	}
	return out, err
}

// countNil counts the nil values in vals.
func countNil(vals [][]byte) int {
	n := 0
	for _, v := range vals {
		if v == nil {
			n++
		}
	}
	return n
}

// checkTypes asks the TYPE of each of keys[maybe], keys MGET read as
// missing although Redis counted them as existing: a string is a key
// written since the read (still a miss), any other type is reported in a
// *WrongTypeError. With maybe empty it returns nil at once.
func (s *Store) checkTypes(ctx context.Context, keys []string, maybe []int) error {
	if len(maybe) == 0 {
		return nil
	}
	types := make([]*redis.StatusCmd, len(maybe))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for j, i := range maybe {
			types[j] = p.Type(ctx, keys[i])
		}
		return nil
	})
	var wrong []int
	for j, c := range types {
		t, err := c.Result()
		if err != nil {
			return fail("mget", err)
		}
		if t != "none" && t != "string" {
			wrong = append(wrong, maybe[j])
		}
	}
	if wrong != nil {
		return &WrongTypeError{Op: "mget", Index: wrong}
	}
	return nil
}

// MGetWithTTL is MGet that also returns the remaining TTL of every key it
// found (as TTL reports it: 0 for no expiry). On a standalone client it is
// one MGET and one PTTL per key in one pipelined round trip (a key that
// expires between its MGET and its PTTL is reported missing; a key MGET
// read as missing whose PTTL finds it is the one MGet's EXISTS would have
// counted); on a cluster client, one script per slot reads each key's value
// and PTTL atomically. Keys of another Redis type, and on a cluster the
// slots that failed, are reported as MGet reports them.
func (s *Store) MGetWithTTL(ctx context.Context, keys []string) ([][]byte, []time.Duration, error) {
	if err := s.check("mget"); err != nil {
		return nil, nil, err
	}
	out := make([][]byte, len(keys))
	ttls := make([]time.Duration, len(keys))
	if len(keys) == 0 {
		return out, ttls, nil
	}
	if s.cluster != nil {
		return s.clusterMGetWithTTL(ctx, keys, out, ttls)
	}
	var mget *redis.SliceCmd
	pttls := make([]*redis.DurationCmd, len(keys))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		mget = p.MGet(ctx, keys...)
		for i, k := range keys {
			pttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	vals, err := mget.Result()
	if err != nil {
		return nil, nil, fail("mget", err)
	}
	if err := fill(out, vals, nil); err != nil {
		return nil, nil, err
	}
	var maybe []int
	for i, c := range pttls {
		d, err := c.Result()
		if err != nil {
			return nil, nil, fail("mget", err)
		}
		ttl, found := fromPTTL(d)
		switch {
		case out[i] == nil && found:
			maybe = append(maybe, i)
		case !found:
			out[i] = nil
		default:
			ttls[i] = ttl
		}
	}
	out, err = typeChecked(out, s.checkTypes(ctx, keys, maybe))
	if out == nil {
		return nil, nil, err
	}
	for i, v := range out {
		if IsLease(v) {
			out[i], ttls[i] = nil, 0
		}
	}
	return out, ttls, err
}

// mgetTTLScript returns, for each of KEYS, its value and its PTTL: false
// and -2 for a missing key, false and -3 for a key of another type; read
// atomically.
const mgetTTLScript = `local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.pcall('GET', k)
  if type(v) == 'table' and v.err then
    out[2*i-1] = false
    out[2*i] = -3
  elseif v then
    out[2*i-1] = v
    out[2*i] = redis.call('PTTL', k)
  else
    out[2*i-1] = false
    out[2*i] = -2
  end
end
return out`

// clusterMGetWithTTL is MGetWithTTL on a cluster: one script per slot.
func (s *Store) clusterMGetWithTTL(ctx context.Context, keys []string, out [][]byte, ttls []time.Duration) ([][]byte, []time.Duration, error) {
	groups := groupBySlot(keys)
	cmds := make([]*redis.Cmd, len(groups))
	_, _ = s.cluster.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, g := range groups {
			cmds[i] = p.Eval(ctx, mgetTTLScript, g.pick(keys))
		}
		return nil
	})
	var wrong []int
	var failed partial
	for i, c := range cmds {
		reply, err := c.Slice()
		if v, ok := c.Val().([]any); ok {
			reply, err = answered(v, err)
		}
		if err != nil {
			failed.add(out, groups[i].idx, err)
			continue
		}
		idx := groups[i].idx
		if len(reply) != 2*len(idx) {
			return nil, nil, &BackendError{Op: "mget", Err: errUnexpectedReply}
		}
		for j, at := range idx {
			v, ms := reply[2*j], reply[2*j+1]
			if v == nil {
				if n, _ := ms.(int64); n == -3 {
					wrong = append(wrong, at)
				}
				continue
			}
			str, ok1 := v.(string)
			n, ok2 := ms.(int64)
			if !ok1 || !ok2 {
				return nil, nil, &BackendError{Op: "mget", Err: errUnexpectedReply}
			}
			ttl, found := fromPTTL(time.Duration(n))
			if n >= 0 {
				ttl, found = fromPTTL(time.Duration(n) * time.Millisecond)
			}
			if !found || IsLease([]byte(str)) {
				continue
			}
			out[at] = chunked.Bytes(str)
			ttls[at] = ttl
		}
	}
	if failed.err != nil {
		for _, at := range failed.index {
			ttls[at] = 0
		}
		return out, ttls, failed.result()
	}
	if wrong != nil {
		slices.Sort(wrong)
		return out, ttls, &WrongTypeError{Op: "mget", Index: wrong}
	}
	return out, ttls, nil
}

// answered returns a cluster pipeline command's reply. When the pipeline's
// ctx ends while go-redis waits to retry another node's commands, go-redis
// sets the ctx error on every command that has no error of its own,
// including those whose replies it had read: such a reply is still the
// node's answer. A command whose reply was not read has no value.
func answered(v []any, err error) ([]any, error) {
	if err != nil && v != nil && isCtxErr(err) {
		return v, nil
	}
	return v, err
}

// isCtxErr reports whether err is exactly a context's error (not a socket
// timeout, which a reply cut short gets).
func isCtxErr(err error) bool {
	return err == context.DeadlineExceeded || err == context.Canceled
}

// partial collects the slots of a cluster MGet whose commands failed.
type partial struct {
	index []int
	err   error // the first failure, as fail made it
}

// add records that the keys at idx were not read because of err, and
// clears whatever out holds for them.
func (p *partial) add(out [][]byte, idx []int, err error) {
	for _, at := range idx {
		out[at] = nil
	}
	p.index = append(p.index, idx...)
	if p.err == nil {
		p.err = fail("mget", err)
	}
}

// result is the *PartialError p describes.
func (p *partial) result() error {
	slices.Sort(p.index)
	return &PartialError{Index: p.index, Err: p.err}
}

// isReplyShape reports whether err is fill's unexpected-reply error (a
// reply of the wrong shape is not a node failure).
func isReplyShape(err error) bool {
	var be *BackendError
	return errors.As(err, &be) && be.Err == errUnexpectedReply
}

// fill copies MGET replies into out: vals[j] goes to out[idx[j]], or to
// out[j] when idx is nil.
func fill(out [][]byte, vals []any, idx []int) error {
	want := len(out)
	if idx != nil {
		want = len(idx)
	}
	if len(vals) != want {
		return &BackendError{Op: "mget", Err: errUnexpectedReply}
	}
	for j, v := range vals {
		at := j
		if idx != nil {
			at = idx[j]
		}
		switch v := v.(type) {
		case nil:
		case string:
			out[at] = chunked.Bytes(v)
		default:
			return &BackendError{Op: "mget", Err: errUnexpectedReply}
		}
	}
	return nil
}

// MSet stores every item with SET PX, pipelined: one round trip on a
// standalone client, one per node on a cluster, off the auto-pipelined
// stream (after the commands the stream still holds for callers that
// stopped waiting, see AutoPipeline). Items apply in order. Every
// TTL must be positive; otherwise ErrInvalidTTL is returned and nothing is
// sent. A failure reports the first failed command; items before and after
// it may or may not have been stored.
func (s *Store) MSet(ctx context.Context, items []Item) error {
	if err := s.check("mset"); err != nil {
		return err
	}
	for i := range items {
		if items[i].TTL <= 0 {
			return ErrInvalidTTL
		}
	}
	if len(items) == 0 {
		return nil
	}
	var keys []string // on a cluster, to settle their masters' streams
	if s.nodes != nil {
		keys = make([]string, len(items))
		for i := range items {
			keys[i] = items[i].Key
		}
	}
	if err := s.settle(ctx, keys...); err != nil {
		return fail("mset", err)
	}
	cmds := make([]*redis.StatusCmd, len(items))
	sent := make([]redis.Cmder, len(items))
	for i, it := range items {
		cmds[i] = setCmd(ctx, it.Key, it.Value, it.TTL)
		sent[i] = cmds[i]
	}
	ann := s.announcing()
	var written []string
	var pubs []redis.Cmder
	if ann && s.cluster == nil {
		written = make([]string, len(items))
		for i := range items {
			written[i] = items[i].Key
		}
		pubs = s.publishes(ctx, written)
		sent = append(sent, pubs...)
	}
	sent = s.once(sent, false)
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, c := range sent {
			_ = p.Process(ctx, c)
		}
		return nil
	})
	var failed error
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			failed = fail("mset", err)
			break
		}
	}
	switch {
	case !ann:
	case s.cluster != nil:
		// Every item stored, also when another failed: peers' copies of
		// each must go.
		for i, c := range cmds {
			if c.Err() == nil {
				written = append(written, items[i].Key)
			}
		}
		s.announceAfter(ctx, "mset", written)
	case failed == nil:
		s.published("mset", written, pubs)
	}
	return failed
}
