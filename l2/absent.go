package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A key that holds a placeholder (a lease, a negative entry: see
// placeholder.go) has no entry: the commands below, which would see the
// placeholder as a key, look at most 12 bytes of it (see placeholderAt and
// newProbe) before they answer.

// expireScript is PEXPIRE KEYS[1] ARGV[1], 0 (missing) for a placeholder;
// a key it expires it announces (publish: ARGV[2] and ARGV[3]).
var expireScript = redis.NewScript(luaPlaceholders + `
if placeholderAt(KEYS[1]) then return 0 end
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) ~= 1 then return 0 end
return publish()`)

// setCondScript is SET KEYS[1] ARGV[1] PX ARGV[2] with NX (ARGV[3] "nx":
// also over a placeholder) or XX (ARGV[3] "xx": not over a placeholder); 1
// when stored. With ARGV[4] "again" (a resend of an NX whose first
// attempt's outcome is unknown, of bytes no one else writes) a key that
// holds exactly ARGV[1] answers 1 too: that attempt stored it (the length
// is compared before the bytes; that attempt announced it). A key it
// stores it announces (publish: ARGV[5] and ARGV[6]).
var setCondScript = redis.NewScript(luaPlaceholders + `
local absent = redis.call('EXISTS', KEYS[1]) == 0 or placeholderAt(KEYS[1])
if (ARGV[3] == 'nx') ~= absent then
  if ARGV[3] == 'nx' and ARGV[4] == 'again' and redis.call('TYPE', KEYS[1]).ok == 'string' and
    redis.call('STRLEN', KEYS[1]) == #ARGV[1] and redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return publish()`)

// probe queues, for key, the two reads that tell a placeholder from an
// entry (STRLEN and the 12-byte head), so a read needs no script: over
// maxmemory a script may be refused (Redis 7.0.15 refuses its first write;
// newer servers may refuse a script without flags outright), plain reads
// are not.
type probe struct {
	n    *redis.IntCmd
	head *redis.StringCmd
}

func newProbe(ctx context.Context, key string) probe {
	return probe{n: redis.NewIntCmd(ctx, "strlen", key),
		head: redis.NewStringCmd(ctx, "getrange", key, 0, placeholderHead-1)}
}

// placeholder reports whether the key held a placeholder of any kind (a
// key of another type, whose STRLEN fails, does not).
func (p probe) placeholder() bool {
	n, err := p.n.Result()
	return err == nil && n > 0 && int64(placeholderLen(p.head.Val())) == n
}

// withProbe sends cmd, a command on key, together with key's probe, and
// returns the probe.
func (s *Store) withProbe(ctx context.Context, key string, cmd redis.Cmder) (probe, error) {
	p := newProbe(ctx, key)
	return p, s.send(ctx, false, cmd, p.n, p.head)
}

// existsKey reports whether key holds an entry (not a placeholder): EXISTS
// and the probe sent together.
func (s *Store) existsKey(ctx context.Context, key string) (bool, error) {
	ex := redis.NewIntCmd(ctx, "exists", key)
	p, err := s.withProbe(ctx, key, ex)
	if err != nil {
		return false, err
	}
	n, err := ex.Result()
	return n > 0 && !p.placeholder(), err
}

// pttlKey is PTTL of key (go-redis's DurationCmd convention: -2ns missing,
// -1ns no expiry), a placeholder reading as missing; sent with the probe.
func (s *Store) pttlKey(ctx context.Context, key string) (time.Duration, error) {
	d := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key)
	p, err := s.withProbe(ctx, key, d)
	if err != nil {
		return 0, err
	}
	v, err := d.Result()
	if err == nil && p.placeholder() {
		return -2, nil
	}
	return v, err
}

// deleteCounted deletes keys, each DEL sent with the probe of its key
// before it (one pipeline, or in order on the stream), and counts those
// that held an entry: a placeholder is deleted (a lease's load is voided,
// a negative entry gone) but not counted. Neither a script nor MULTI: Redis over maxmemory refuses both,
// and a Delete must work then. The count can be off by one for a key a
// load leases or fills between its probe and its DEL; the delete itself is
// exact. pub are more commands (PUBLISH) sent after the deletes, in the
// same round trip.
func (s *Store) deleteCounted(ctx context.Context, keys []string, pub ...redis.Cmder) (int64, error) {
	probes := make([]probe, len(keys))
	dels := make([]*redis.IntCmd, len(keys))
	cmds := make([]redis.Cmder, 0, 3*len(keys)+len(pub))
	for i, k := range keys {
		probes[i] = newProbe(ctx, k)
		dels[i] = redis.NewIntCmd(ctx, "del", k)
		cmds = append(cmds, probes[i].n, probes[i].head, dels[i])
	}
	if err := s.send(ctx, false, append(cmds, pub...)...); err != nil {
		return 0, err
	}
	var total int64
	for i, d := range dels {
		n, err := d.Result()
		if err != nil {
			return total, err
		}
		if !probes[i].placeholder() {
			total += n
		}
	}
	return total, nil
}

// SetAbsentMany is SetCond with NX for several items, one script per item
// in one pipeline (sent with EVAL, as FillMany): done[i] reports whether
// item i was stored, errs[i] is its error.
func (s *Store) SetAbsentMany(ctx context.Context, items []Item) (done []bool, errs []error) {
	cmds, err := s.evalEach(ctx, "mset", setCondScript, len(items), func(i int) (string, []any) {
		k := items[i].Key
		ch, msg := s.announceArgs(k)
		return k, []any{items[i].Value, pxMillis(items[i].TTL), "nx", "", ch, msg}
	})
	return s.eachDone("mset", len(items), cmds, err, func(i int) string { return items[i].Key })
}

// againArg is the scripts' argument that turns their own-bytes check on
// (Again).
func againArg(again bool) string {
	if again {
		return "again"
	}
	return ""
}
