package l2

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// swapScript replaces KEYS[1]'s value with ARGV[2], keeping its TTL, only
// while it still holds the string ARGV[1], and then announces it (publish:
// ARGV[3] and ARGV[4]): 1 when it did, 0 otherwise (also for a key that now
// holds another Redis type).
var swapScript = redis.NewScript(luaPublish + `
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'string' and v == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return publish()
end
return 0`)

// Swap is one compare-and-set for SwapMany.
type Swap struct {
	Key      string // the key after SwapMany's prefix
	Old, New []byte // the bytes expected, and their replacement
}

// SwapMany replaces the value of each item's key (prefix+Key) with New, keeping the key's remaining
// TTL, only while the key still holds exactly Old (one server-side script
// per key, sent with EVAL in one pipeline, so it needs no script cache and
// works against one node of a cluster for keys in different slots): a
// value written meanwhile is never overwritten. done[i] reports whether
// item i was swapped; errs[i] is non-nil when item i failed (then done[i]
// is false). done[i] false with errs[i] nil means the key no longer held
// Old.
func (s *Store) SwapMany(ctx context.Context, prefix string, items []Swap) (done []bool, errs []error) {
	cmds, err := s.evalEach(ctx, "swap", swapScript, len(items), func(i int) (string, []any) {
		k := prefix + items[i].Key
		ch, msg := s.announceArgs(k)
		return k, []any{items[i].Old, items[i].New, ch, msg}
	})
	return s.eachDone("swap", len(items), cmds, err, func(i int) string { return prefix + items[i].Key })
}
