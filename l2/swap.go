package l2

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// swapScript replaces KEYS[1]'s value with ARGV[2], keeping its TTL, only
// while it still holds ARGV[1]: 1 when it did, 0 otherwise.
var swapScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0`)

// Swap is one compare-and-set for SwapMany.
type Swap struct {
	Key      string
	Old, New []byte
}

// SwapMany replaces each item's value with New, keeping the key's remaining
// TTL, only while the key still holds exactly Old (a server-side script
// per key, all in one pipeline: a value written meanwhile is never
// overwritten). It reports, per item, whether the swap happened; err is the
// first failure, and the items after it report false.
func (s *Store) SwapMany(ctx context.Context, items []Swap) ([]bool, error) {
	if err := s.check("swap"); err != nil {
		return nil, err
	}
	out := make([]bool, len(items))
	if len(items) == 0 {
		return out, nil
	}
	// Load the script once so the pipeline can use EVALSHA.
	if err := swapScript.Load(ctx, s.rdb).Err(); err != nil {
		return out, fail("swap", err)
	}
	cmds := make([]*redis.Cmd, len(items))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, it := range items {
			cmds[i] = swapScript.EvalSha(ctx, p, []string{it.Key}, it.Old, it.New)
		}
		return nil
	})
	for i, c := range cmds {
		n, err := c.Int64()
		if err != nil {
			return out, fail("swap", err)
		}
		out[i] = n == 1
	}
	return out, nil
}
