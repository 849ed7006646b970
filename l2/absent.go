package l2

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// A key under a lease has no entry: the commands below, which would see
// the placeholder as a key, ask through scripts that look at most 12 bytes
// of it (see leaseAt).

// existsScript is EXISTS for one key, 0 for a lease.
var existsScript = redis.NewScript(luaLease + `
if leaseAt(KEYS[1]) then return 0 end
return redis.call('EXISTS', KEYS[1])`)

// pttlScript is PTTL for one key, -2 (missing) for a lease.
var pttlScript = redis.NewScript(luaLease + `
if leaseAt(KEYS[1]) then return -2 end
return redis.call('PTTL', KEYS[1])`)

// expireScript is PEXPIRE KEYS[1] ARGV[1], 0 (missing) for a lease.
var expireScript = redis.NewScript(luaLease + `
if leaseAt(KEYS[1]) then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[1])`)

// delScript deletes KEYS (all in one slot) and counts those that held an
// entry: a lease is deleted (voiding its load) but not counted.
var delScript = redis.NewScript(luaLease + `
local n = 0
for _, k in ipairs(KEYS) do
  local lease = leaseAt(k)
  local d = redis.call('DEL', k)
  if not lease then n = n + d end
end
return n`)

// setCondScript is SET KEYS[1] ARGV[1] PX ARGV[2] with NX (ARGV[3] "nx":
// also over a lease) or XX (ARGV[3] "xx": not over a lease); 1 when stored.
var setCondScript = redis.NewScript(luaLease + `
local absent = redis.call('EXISTS', KEYS[1]) == 0 or leaseAt(KEYS[1])
if (ARGV[3] == 'nx') ~= absent then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1`)

// existsKey reports whether key holds an entry (not a lease).
func (s *Store) existsKey(ctx context.Context, key string) (bool, error) {
	n, err := existsScript.Run(ctx, s.rdb, []string{key}).Int64()
	return n > 0, err
}

// pttlKey is PTTL of key in go-redis's DurationCmd convention (-2ns
// missing, -1ns no expiry), a lease reading as missing.
func (s *Store) pttlKey(ctx context.Context, key string) (time.Duration, error) {
	ms, err := pttlScript.Run(ctx, s.rdb, []string{key}).Int64()
	if err != nil || ms < 0 {
		return time.Duration(ms), err
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// expireKey is PEXPIRE of key, false for a missing key or a lease.
func (s *Store) expireKey(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	n, err := expireScript.Run(ctx, s.rdb, []string{key}, pxMillis(ttl)).Int64()
	return n == 1, err
}

// setCondKey is SET NX (ifExists false) or XX with leases counted as
// missing.
func (s *Store) setCondKey(ctx context.Context, key string, val []byte, ttl time.Duration, ifExists bool) (bool, error) {
	cond := "nx"
	if ifExists {
		cond = "xx"
	}
	n, err := setCondScript.Run(ctx, s.rdb, []string{key}, val, pxMillis(ttl), cond).Int64()
	return n == 1, err
}
