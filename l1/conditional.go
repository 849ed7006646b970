package l1

import "time"

// SetIfPresence stores val like Set, but only if the cache holds an
// unexpired entry for key (present true) or holds none (present false; a
// value Config.Absent names counts as none).
// The check and the store happen under the key's write lock, which every
// Set, SetIfVersion, Delete and Extend of the key also takes, so of
// concurrent SetIfPresence(key, ..., false) calls at most one stores. It
// returns true when val was stored.
func (c *Cache) SetIfPresence(key string, val []byte, ttl time.Duration, present bool) bool {
	return c.locked(key, func(h uint64, st *stripe) bool {
		if _, ok := c.entryAt(h, key); ok != present {
			return false
		}
		st.ver.Add(1)
		return c.put(h, c.keyCheck(key), val, ttl)
	})
}

// Extend stores key's current value again with a new ttl, if the cache
// holds an unexpired entry for key and key's token still equals v (nothing
// wrote or deleted it since v was read). The value is read under the key's
// write lock, so it is the latest one, never an older value written back.
// It returns true when the entry now lives for ttl.
func (c *Cache) Extend(key string, ttl time.Duration, v Version) bool {
	return c.locked(key, func(h uint64, st *stripe) bool {
		if Version(st.ver.Load()) != v {
			c.ctr.stale.Add(1)
			return false
		}
		return c.restore(h, st, key, ttl)
	})
}

// ExtendLatest is Extend without a token: it re-stores whatever value key
// holds now with the new ttl. It returns false when the cache holds no
// unexpired entry for key, or a value Config.Absent names.
func (c *Cache) ExtendLatest(key string, ttl time.Duration) bool {
	return c.locked(key, func(h uint64, st *stripe) bool {
		if _, ok := c.entryAt(h, key); !ok {
			return false
		}
		return c.restore(h, st, key, ttl)
	})
}

// restore re-stores key's current value for ttl, advancing its token; the
// caller holds key's stripe lock. False when there is no unexpired entry.
func (c *Cache) restore(h uint64, st *stripe, key string, ttl time.Duration) bool {
	val, ok := c.current(h, key)
	if !ok {
		return false
	}
	st.ver.Add(1)
	return c.put(h, c.keyCheck(key), val, ttl)
}

// locked runs fn holding key's shard read lock and stripe lock (every
// write of key runs under them: Set, SetIfVersion, SetIfPresence, Extend),
// and counts a stored entry; false when the cache is closed.
func (c *Cache) locked(key string, fn func(h uint64, st *stripe) bool) bool {
	ok := c.lockedRun(key, fn)
	if c.arena.due.Load() {
		c.clean()
	}
	return ok
}

// lockedRun is locked but for the arena's cleaning, which runs after the
// locks are released.
func (c *Cache) lockedRun(key string, fn func(h uint64, st *stripe) bool) bool {
	h := c.keyHash(key)
	if c.keyLocked(h, func(st *stripe) bool { return fn(h, st) }) {
		c.ctr.sets.Add(1)
		return true
	}
	return false
}

// keyLocked runs fn holding the shard read lock and the stripe lock of the
// key hashed to h, and returns what fn returns; false on a closed cache.
func (c *Cache) keyLocked(h uint64, fn func(st *stripe) bool) bool {
	sh := c.shardOf(h)
	sh.mu.RLock()
	defer sh.mu.RUnlock()
	if c.closed {
		return false
	}
	st := c.stripeOf(h)
	st.mu.Lock()
	defer st.mu.Unlock()
	return fn(st)
}

// entryAt is current for a value that is an entry: false for one
// Config.Absent names.
func (c *Cache) entryAt(h uint64, key string) ([]byte, bool) {
	val, ok := c.current(h, key)
	if ok && c.cfg.absent != nil && c.cfg.absent(val) {
		return nil, false
	}
	return val, ok
}

// current returns key's unexpired value (key hashes to h) without counting
// a hit or a miss.
func (c *Cache) current(h uint64, key string) ([]byte, bool) {
	e := c.lookup(h, key)
	if e == nil {
		return nil, false
	}
	val, exp := e.load()
	if exp <= c.now() {
		return nil, false
	}
	return val, true
}
