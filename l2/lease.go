package l2

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/redis/go-redis/v9"
)

// A lease is a placeholder (see placeholder.go) a loader plants in the key
// itself before it loads (as memcache's leases and rueidisaside's
// placeholders do): the load's result is stored only while the placeholder
// is still there, checked and written in one server-side script. Whoever
// writes the key in between (a Set, a Delete, another SDK, redis-cli,
// expiry or eviction) replaces the placeholder, and the store is dropped: a
// value computed before that write never overwrites it. A lease is
// LeaseMagic followed by 32 characters of token: 44 bytes. NewLeaseFor's
// token is 't', the holder's lease TTL in milliseconds as 8 hex digits,
// and 23 random hex digits, so that a reader judges the lease by its
// holder's TTL (LeaseTTLOf); older Clients wrote 32 random hex digits,
// which never start with 't'.

// NewLease returns a fresh placeholder with a random token.
func NewLease() string { return LeaseMagic + NewToken() }

// NewLeaseFor returns a fresh placeholder whose token carries ttl, its
// holder's lease TTL (capped at 2^32-1 ms, about 49 days), beside 92
// random bits.
func NewLeaseFor(ttl time.Duration) string {
	ms := min(max(ttl.Milliseconds(), 0), 1<<32-1)
	return LeaseMagic + "t" + fmt.Sprintf("%08x", ms) + NewToken()[:23]
}

// LeaseTTLOf returns the holder's lease TTL a lease placeholder carries
// (NewLeaseFor), and false for a lease that carries none (an older
// Client's) or bytes that are not a lease.
func LeaseTTLOf(lease []byte) (time.Duration, bool) {
	if !IsLease(lease) || lease[len(LeaseMagic)] != 't' {
		return 0, false
	}
	ms, err := strconv.ParseUint(string(lease[len(LeaseMagic)+1:len(LeaseMagic)+9]), 16, 32)
	if err != nil {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// NewToken returns 32 random hex digits: a lock token (TryLock) no other
// caller holds.
func NewToken() string {
	var tok [16]byte
	_, _ = rand.Read(tok[:])
	return hex.EncodeToString(tok[:])
}

// Digest is the digest the compare-and-set of SetIfDigest compares: the
// hex SHA-1 of the stored bytes, which Redis's Lua computes as
// redis.sha1hex (an equality check of bytes the caller read, not a
// security boundary: whoever can write Redis can write any value).
func Digest(stored []byte) string {
	sum := sha1.Sum(stored)
	return hex.EncodeToString(sum[:])
}

// acquireScript plants ARGV[1] for ARGV[2] ms when KEYS[1] is missing,
// holds an entry whose digest is ARGV[3] (an entry the caller could not
// open and replaces), or holds the lease ARGV[3] (one its holder abandoned,
// which the caller takes over). Replies: {1} planted (or ARGV[1] already
// there: a retry whose first attempt planted it); {2, pttl, lease} another
// lease is there; {0, pttl, value} an entry is there.
var acquireScript = redis.NewScript(luaPlaceholders + `
local v = redis.pcall('GET', KEYS[1])
if type(v) == 'table' and v.err then return v end
local over = ARGV[3] ~= '' and v ~= false and
  ((isLease(v) and v == ARGV[3]) or (not isLease(v) and redis.sha1hex(v) == ARGV[3]))
if v == false or over then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return {1}
end
if isLease(v) then
  if v == ARGV[1] then return {1} end
  return {2, redis.call('PTTL', KEYS[1]), v}
end
return {0, redis.call('PTTL', KEYS[1]), v}`)

// fillScript stores ARGV[2] for ARGV[3] ms only while KEYS[1] holds the
// lease ARGV[1], then announces it (publish: ARGV[5] and ARGV[6]).
// With ARGV[4] "again" a key that holds ARGV[2] already is stored too: a
// resend whose first attempt stored it (Fill's again).
var fillScript = redis.NewScript(luaPlaceholders + `
local v = redis.pcall('GET', KEYS[1])
if v ~= ARGV[1] then
  if ARGV[4] == 'again' and v == ARGV[2] then return 1 end
  return 0
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return publish()`)

// renewScript extends the lease ARGV[1] to ARGV[2] ms while it holds.
var renewScript = redis.NewScript(`
if redis.pcall('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])`)

// casScript stores ARGV[2] for ARGV[3] ms only while KEYS[1] holds bytes
// whose digest is ARGV[1] and, when ARGV[4] is not empty, whose absolute
// expiry (PEXPIRETIME, ms) is ARGV[4]; then it announces as fillScript
// does. With ARGV[5] "again" a key that holds ARGV[2] already is stored
// too (a resend whose first attempt stored it). A server without
// PEXPIRETIME (before Redis 7) compares the digest alone.
var casScript = redis.NewScript(luaPlaceholders + `
local v = redis.pcall('GET', KEYS[1])
if ARGV[5] == 'again' and v == ARGV[2] then return 1 end
if type(v) ~= 'string' or redis.sha1hex(v) ~= ARGV[1] then return 0 end
if ARGV[4] ~= '' then
  local at = redis.pcall('PEXPIRETIME', KEYS[1])
  if type(at) == 'number' and at ~= tonumber(ARGV[4]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return publish()`)

// LeaseState is what Acquire found.
type LeaseState int

// What Acquire can find.
const (
	// LeaseAcquired: the caller's lease is planted; it loads.
	LeaseAcquired LeaseState = iota + 1
	// LeaseHeld: another caller's lease is there; it is loading.
	LeaseHeld
	// LeaseFoundEntry: an entry is there; nothing was planted.
	LeaseFoundEntry
)

// Acquire plants lease (from NewLease) under key for ttl when the key is
// missing (or already holds this very lease: a retried Acquire), or when
// it holds what replace names: an entry whose Digest is replace (one the
// caller could not open), or the lease placeholder replace itself (one its
// holder abandoned, taken over: of several callers naming it, one wins);
// "" replaces nothing. Otherwise it plants nothing and reports what is
// there: another lease, with its remaining TTL and, as entry, the
// placeholder; or an entry, with its bytes and remaining TTL (0: no
// expiry). It is one server-side script.
func (s *Store) Acquire(ctx context.Context, key, lease string, ttl time.Duration, replace string) (state LeaseState, entry []byte, left time.Duration, err error) {
	if err := s.check("lease"); err != nil {
		return 0, nil, 0, err
	}
	if ttl <= 0 {
		return 0, nil, 0, ErrInvalidTTL
	}
	cmd, err := s.script(ctx, false, acquireScript, key, lease, pxMillis(ttl), replace)
	if err != nil {
		return 0, nil, 0, fail("lease", err)
	}
	reply, err := cmd.Slice()
	if err != nil {
		return 0, nil, 0, fail("lease", err)
	}
	return acquired(reply)
}

// acquired reads acquireScript's reply.
func acquired(reply []any) (LeaseState, []byte, time.Duration, error) {
	code, ok := intAt(reply, 0)
	if !ok {
		return 0, nil, 0, &BackendError{Op: "lease", Err: errUnexpectedReply}
	}
	switch code {
	case 1:
		return LeaseAcquired, nil, 0, nil
	case 2:
		ms, _ := intAt(reply, 1)
		var held []byte
		if len(reply) == 3 {
			if v, ok := reply[2].(string); ok {
				held = []byte(v)
			}
		}
		return LeaseHeld, held, time.Duration(max(ms, 0)) * time.Millisecond, nil
	}
	ms, ok1 := intAt(reply, 1)
	v, ok2 := "", len(reply) == 3
	if ok2 {
		v, ok2 = reply[2].(string)
	}
	if !ok1 || !ok2 {
		return 0, nil, 0, &BackendError{Op: "lease", Err: errUnexpectedReply}
	}
	if ms == -1 {
		return LeaseFoundEntry, []byte(v), 0, nil // no expiry
	}
	return LeaseFoundEntry, []byte(v), time.Duration(max(ms, 1)) * time.Millisecond, nil
}

func intAt(reply []any, i int) (int64, bool) {
	if i >= len(reply) {
		return 0, false
	}
	n, ok := reply[i].(int64)
	return n, ok
}

// Fill stores val under key for ttl only while key still holds lease, and
// reports whether it did. A key written, deleted, expired or evicted since
// the lease was planted keeps what it has.
//
// again says the call resends one whose outcome is unknown (its reply
// lost) and that val's bytes are the caller's alone (sealed under a fresh
// nonce): a key that holds exactly val was then stored by that first
// attempt, and Fill reports stored. Without again, bytes equal to val say
// nothing (another writer may have written the same), and a resend that
// finds the lease gone reports not stored.
func (s *Store) Fill(ctx context.Context, key, lease string, val []byte, ttl time.Duration, again bool) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	ch, msg := s.announceArgs(key)
	return s.runDone(ctx, "set", s.large(len(val)), fillScript, key, lease, val, pxMillis(ttl), againArg(again), ch, msg)
}

// FillMany is Fill for several keys, one script per item in one pipeline
// (sent with EVAL, so it needs no script cache and works on a cluster for
// keys in different slots). done[i] reports whether item i was stored;
// errs[i] is its error.
func (s *Store) FillMany(ctx context.Context, items []Item, leases []string) (done []bool, errs []error) {
	cmds, err := s.evalEach(ctx, "mset", fillScript, len(items), func(i int) (string, []any) {
		k := items[i].Key
		ch, msg := s.announceArgs(k)
		return k, []any{leases[i], items[i].Value, pxMillis(items[i].TTL), "", ch, msg}
	})
	return s.eachDone("mset", len(items), cmds, err, func(i int) string { return items[i].Key })
}

// AcquireMany is Acquire for several keys, one script per key in one
// pipeline; replace[i] is key i's replace (replace may be nil: none). For
// each key it returns the state and, for LeaseFoundEntry, the entry and
// its remaining TTL; errs[i] is key i's error.
func (s *Store) AcquireMany(ctx context.Context, keys, leases []string, ttl time.Duration, replace []string) (states []LeaseState, entries [][]byte, lefts []time.Duration, errs []error) {
	states = make([]LeaseState, len(keys))
	entries = make([][]byte, len(keys))
	lefts = make([]time.Duration, len(keys))
	errs = make([]error, len(keys))
	cmds, err := s.evalEach(ctx, "lease", acquireScript, len(keys), func(i int) (string, []any) {
		over := ""
		if replace != nil {
			over = replace[i]
		}
		return keys[i], []any{leases[i], pxMillis(ttl), over}
	})
	for i := range keys {
		if cmds == nil {
			errs[i] = err
			continue
		}
		reply, err := cmds[i].Slice()
		if err != nil {
			errs[i] = fail("lease", err)
			continue
		}
		states[i], entries[i], lefts[i], errs[i] = acquired(reply)
	}
	return
}

// Renew extends lease to ttl from now while key still holds it, and
// reports whether it did.
func (s *Store) Renew(ctx context.Context, key, lease string, ttl time.Duration) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	return s.runDone(ctx, "lease", false, renewScript, key, lease, pxMillis(ttl))
}

// RenewMany is Renew for several keys, one script per key in one
// pipeline (a round trip per node on a cluster): done[i] reports whether
// keys[i] still held leases[i] and was renewed; errs[i] is its error.
func (s *Store) RenewMany(ctx context.Context, keys, leases []string, ttl time.Duration) (done []bool, errs []error) {
	if ttl <= 0 {
		errs = make([]error, len(keys))
		for i := range errs {
			errs[i] = ErrInvalidTTL
		}
		return make([]bool, len(keys)), errs
	}
	cmds, err := s.evalEach(ctx, "lease", renewScript, len(keys), func(i int) (string, []any) {
		return keys[i], []any{leases[i], pxMillis(ttl)}
	})
	return s.eachDone("lease", len(keys), cmds, err, func(i int) string { return keys[i] })
}

// Release deletes key while it still holds lease (a load that failed gives
// the key back at once instead of at the lease's expiry), and reports
// whether it did. Redis over maxmemory refuses the compare-and-delete
// script (at its DEL, or before it runs) but not a plain DEL:
// then the key is deleted whatever it holds, which is always safe for a
// cache (the next read misses; a load under another lease stores nothing).
func (s *Store) Release(ctx context.Context, key, lease string) (bool, error) {
	ok, err := s.Unlock(ctx, key, lease)
	var be *BackendError
	if err != nil && errors.As(err, &be) && redis.HasErrorPrefix(be.Err, "OOM") {
		keys := []string{key}
		ann := s.announcing()
		var pubs []redis.Cmder
		if ann && s.cluster == nil {
			pubs = s.publishes(ctx, keys)
		}
		del := redis.NewIntCmd(ctx, "del", key)
		if err := s.send(ctx, false, append([]redis.Cmder{del}, pubs...)...); err != nil {
			return false, fail("unlock", err)
		}
		n, derr := del.Result()
		switch {
		case !ann || derr != nil:
		case s.cluster != nil:
			s.announceAfter(ctx, "unlock", keys)
		default:
			s.published("unlock", keys, pubs)
		}
		return n > 0, fail("unlock", derr)
	}
	return ok, err
}

// SetIfDigest stores val under key for ttl only while key holds bytes
// whose Digest is digest and, when expireAt is positive, whose absolute
// expiry is expireAt (Unix ms, as ExpireTime reads it): a refresh of the
// entry the caller read, which any write since then makes a no-op, even
// one of the same bytes (a write sets a new expiry). It reports whether it
// stored; again is Fill's.
func (s *Store) SetIfDigest(ctx context.Context, key, digest string, expireAt int64, val []byte, ttl time.Duration, again bool) (bool, error) {
	if ttl <= 0 {
		return false, ErrInvalidTTL
	}
	at := ""
	if expireAt > 0 {
		at = strconv.FormatInt(expireAt, 10)
	}
	ch, msg := s.announceArgs(key)
	return s.runDone(ctx, "set", s.large(len(val)), casScript, key, digest, val, pxMillis(ttl), at, againArg(again), ch, msg)
}

// ExpireTime returns key's absolute expiry in Unix milliseconds
// (PEXPIRETIME, Redis 7): 0 for a key without one, ErrNotFound for a
// missing key or a placeholder (a lease, a negative entry).
func (s *Store) ExpireTime(ctx context.Context, key string) (int64, error) {
	if err := s.check("ttl"); err != nil {
		return 0, err
	}
	cmd := redis.NewIntCmd(ctx, "pexpiretime", key)
	p, err := s.withProbe(ctx, key, cmd)
	if err != nil {
		return 0, fail("ttl", err)
	}
	at, err := cmd.Result()
	switch {
	case err != nil:
		return 0, fail("ttl", err)
	case at == -2 || p.placeholder():
		return 0, ErrNotFound
	case at < 0:
		return 0, nil
	}
	return at, nil
}

// dropLeases turns every lease placeholder in vals into nil (missing).
func dropLeases(vals [][]byte) {
	for i, v := range vals {
		if IsLease(v) {
			vals[i] = nil
		}
	}
}

func init() {
	for name, s := range map[string]*redis.Script{
		"lease.acquire": acquireScript, "lease.fill": fillScript, "lease.renew": renewScript,
		"lease.cas": casScript, "lease.release": unlockScript, "set.cond": setCondScript,
	} {
		seam.NameScript(name, s.Hash())
	}
}
