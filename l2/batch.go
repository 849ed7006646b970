package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Item is one entry of an MSet.
type Item struct {
	Key   string
	Value []byte
	TTL   time.Duration // must be positive
}

// MGet returns the values of keys in key order, nil for a missing key. On a
// standalone client it sends a single MGET. On a cluster client it groups
// the keys by hash slot and sends one MGET per slot, all in one pipeline.
// The returned slices are fresh allocations owned by the caller. An empty
// keys slice returns an empty result without a round trip.
func (s *Store) MGet(ctx context.Context, keys []string) ([][]byte, error) {
	if err := s.check("mget"); err != nil {
		return nil, err
	}
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	if s.cluster == nil {
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, fail("mget", err)
		}
		if err := fill(out, vals, nil); err != nil {
			return nil, err
		}
		return out, nil
	}
	groups := groupBySlot(keys)
	cmds := make([]*redis.SliceCmd, len(groups))
	_, _ = s.cluster.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, g := range groups {
			cmds[i] = p.MGet(ctx, g.pick(keys)...)
		}
		return nil
	})
	for i, c := range cmds {
		vals, err := c.Result()
		if err != nil {
			return nil, fail("mget", err)
		}
		if err := fill(out, vals, groups[i].idx); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MGetWithTTL is MGet that also returns the remaining TTL of every key it
// found (as TTL reports it: 0 for no expiry). On a standalone client it is
// one MGET and one PTTL per key in one pipelined round trip (a key that
// expired between its MGET and its PTTL is reported missing). On a cluster
// client each hash slot's keys are read by one script that returns every
// value with its PTTL, all slots in one pipeline: one command per slot, so
// a slot caught mid-migration (ASK, TRYAGAIN) is retried as one command.
// (go-redis v9.23's cluster pipeline can send a command to two nodes at
// once when several commands of one migrating slot share a batch.)
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
	for i, c := range pttls {
		if out[i] == nil {
			continue
		}
		d, err := c.Result()
		if err != nil {
			return nil, nil, fail("mget", err)
		}
		ttl, found := fromPTTL(d)
		if !found {
			out[i] = nil
		}
		ttls[i] = ttl
	}
	return out, ttls, nil
}

// mgetTTLScript returns, for each of KEYS, its value and its PTTL (false
// and -2 for a missing key, and for a key of another type, as MGET reports
// it), read atomically.
const mgetTTLScript = `local out = {}
for i, k in ipairs(KEYS) do
  local v = redis.pcall('GET', k)
  if type(v) == 'table' and v.err then v = false end
  if v then
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
	for i, c := range cmds {
		reply, err := c.Slice()
		if err != nil {
			return nil, nil, fail("mget", err)
		}
		idx := groups[i].idx
		if len(reply) != 2*len(idx) {
			return nil, nil, &BackendError{Op: "mget", Err: errUnexpectedReply}
		}
		for j, at := range idx {
			v, ms := reply[2*j], reply[2*j+1]
			if v == nil {
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
			if !found {
				continue
			}
			out[at] = []byte(str)
			ttls[at] = ttl
		}
	}
	return out, ttls, nil
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
			out[at] = []byte(v)
		default:
			return &BackendError{Op: "mget", Err: errUnexpectedReply}
		}
	}
	return nil
}

// MSet stores every item with SET PX, pipelined: one round trip on a
// standalone client, one per node on a cluster. Items apply in order. Every
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
	cmds := make([]*redis.StatusCmd, len(items))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, it := range items {
			cmds[i] = setCmd(ctx, it.Key, it.Value, it.TTL)
			_ = p.Process(ctx, cmds[i])
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			keys := make([]string, len(items))
			for i := range items {
				keys[i] = items[i].Key
			}
			return fail("mset", err)
		}
	}
	return nil
}
