package l2

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Scan calls fn with the keys matching pattern (SCAN MATCH, count keys
// asked per step), walking every master of a cluster client. fn is never
// called concurrently, and never again once it has returned an error: that
// error stops the walk on every master and is returned.
func (s *Store) Scan(ctx context.Context, pattern string, count int64, fn func(keys []string) error) error {
	return s.scan(ctx, pattern, count, 0, func(keys []string, _ uint64) error {
		if len(keys) == 0 {
			return nil
		}
		return fn(keys)
	})
}

// ScanFrom walks the keys that start with prefix (taken literally) and
// match pattern after it, from cursor (0: the beginning), for resuming a
// walk: fn receives each batch (possibly none) and the cursor to resume
// from once it has handled it (0 after the last batch). A cluster client
// has one cursor per master, so on one ScanFrom refuses a nonzero cursor.
func (s *Store) ScanFrom(ctx context.Context, prefix, pattern string, count int64, cursor uint64, fn func(keys []string, next uint64) error) error {
	if cursor != 0 && s.cluster != nil {
		return fail("scan", errors.New("a cursor resumes a walk of one server, not of a cluster"))
	}
	return s.scan(ctx, globEscape(prefix)+pattern, count, cursor, func(keys []string, next uint64) error {
		mine := keys[:0:0]
		for _, k := range keys {
			if strings.HasPrefix(k, prefix) {
				mine = append(mine, k)
			}
		}
		return fn(mine, next)
	})
}

func (s *Store) scan(ctx context.Context, pattern string, count int64, start uint64, fn func(keys []string, next uint64) error) error {
	if err := s.check("scan"); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex // ForEachMaster walks the masters concurrently
	var stopped error
	call := func(keys []string, next uint64) error {
		mu.Lock()
		defer mu.Unlock()
		if stopped != nil {
			return stopped
		}
		if err := fn(keys, next); err != nil {
			stopped = err
			cancel()
			return err
		}
		return nil
	}
	walk := func(ctx context.Context, c redis.Cmdable, cursor uint64) error {
		for {
			keys, next, err := c.Scan(ctx, cursor, pattern, count).Result()
			if err != nil {
				return fail("scan", err)
			}
			if len(keys) > 0 || next == 0 {
				if err := call(keys, next); err != nil {
					return err
				}
			}
			if next == 0 {
				return nil
			}
			cursor = next
		}
	}
	var err error
	if s.cluster != nil {
		err = s.cluster.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return walk(ctx, m, 0) })
	} else {
		err = walk(ctx, s.rdb, start)
	}
	mu.Lock()
	defer mu.Unlock()
	if stopped != nil {
		return stopped
	}
	return err
}

// Entry is one entry as ScanEntries reads it, unopened.
type Entry struct {
	Key    string        // the key without the walk's prefix
	Stored []byte        // the bytes Redis holds; nil when the key holds another Redis type
	TTL    time.Duration // remaining time to live; 0: no expiry
}

// ScanEntries is ScanFrom that also reads each batch's entries (ReadRaw,
// one pipeline per batch) and hands fn the entries, their keys without
// prefix. A key that expires between the walk and the read is left out;
// a lease placeholder is no entry (Stored nil); a negative entry is
// reported with its bytes.
func (s *Store) ScanEntries(ctx context.Context, prefix, pattern string, count int64, cursor uint64, fn func(batch []Entry, next uint64) error) error {
	return s.ScanFrom(ctx, prefix, pattern, count, cursor, func(keys []string, next uint64) error {
		var batch []Entry
		if len(keys) > 0 {
			vals, ttls, other, err := s.readRaw(ctx, keys)
			if err != nil {
				return err
			}
			batch = make([]Entry, 0, len(keys))
			for i, k := range keys {
				if vals[i] == nil && !other[i] {
					continue // expired since the walk
				}
				batch = append(batch, Entry{Key: strings.TrimPrefix(k, prefix), Stored: vals[i], TTL: ttls[i]})
			}
		}
		return fn(batch, next)
	})
}

// UnlinkMatching unlinks every key that starts with prefix and matches
// pattern after it (ScanFrom, then Unlink, a batch at a time), calls
// unlinked with each batch's keys, without prefix, once their UNLINK was
// sent (whether or not it failed), and returns how many Redis deleted.
func (s *Store) UnlinkMatching(ctx context.Context, prefix, pattern string, count int64, unlinked func(keys []string)) (int64, error) {
	var deleted int64
	err := s.ScanFrom(ctx, prefix, pattern, count, 0, func(keys []string, _ uint64) error {
		if len(keys) == 0 {
			return nil
		}
		n, err := s.unlink(ctx, keys...)
		deleted += n
		for i, k := range keys {
			keys[i] = strings.TrimPrefix(k, prefix)
		}
		unlinked(keys)
		return err
	})
	return deleted, err
}

// readRaw reads the value and remaining TTL of each key with single-key
// commands in one pipeline (so it works against one node of a cluster for
// keys in different slots). vals[i] is nil for a missing key; other[i]
// reports a key of another Redis type (vals[i] nil, ttls[i] its TTL);
// ttls[i] is 0 for no expiry.
func (s *Store) readRaw(ctx context.Context, keys []string) (vals [][]byte, ttls []time.Duration, other []bool, err error) {
	if err := s.check("get"); err != nil {
		return nil, nil, nil, err
	}
	gets := make([]*redis.StringCmd, len(keys))
	pttls := make([]*redis.DurationCmd, len(keys))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			gets[i] = p.Get(ctx, k)
			pttls[i] = p.PTTL(ctx, k)
		}
		return nil
	})
	vals = make([][]byte, len(keys))
	ttls = make([]time.Duration, len(keys))
	other = make([]bool, len(keys))
	for i := range keys {
		b, gerr := gets[i].Bytes()
		switch {
		case errors.Is(gerr, redis.Nil):
		case gerr != nil && strings.HasPrefix(gerr.Error(), "WRONGTYPE"):
			other[i] = true
		case gerr != nil:
			return nil, nil, nil, fail("get", gerr)
		case IsLease(b): // a load in progress: no entry
		default:
			vals[i] = b
		}
		d, perr := pttls[i].Result()
		if perr != nil {
			return nil, nil, nil, fail("get", perr)
		}
		if ttl, found := fromPTTL(d); found {
			ttls[i] = ttl
		} else {
			vals[i], other[i] = nil, false // expired between the two commands
		}
	}
	return vals, ttls, other, nil
}

// unlink removes keys with one UNLINK per key in one pipeline (Redis frees
// the values in the background; single-key commands work against one node
// of a cluster), announces each key (AnnounceWrites), and returns how many
// existed.
func (s *Store) unlink(ctx context.Context, keys ...string) (int64, error) {
	if err := s.check("del"); err != nil {
		return 0, err
	}
	if err := s.settle(ctx, keys...); err != nil {
		return 0, fail("del", err)
	}
	ann := s.announcing()
	var pubs []redis.Cmder
	if ann && s.cluster == nil {
		pubs = s.publishes(ctx, keys)
	}
	cmds := make([]*redis.IntCmd, len(keys))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.Unlink(ctx, k)
		}
		for _, c := range pubs {
			_ = p.Process(ctx, c)
		}
		return nil
	})
	n, err := sumDeleted(cmds)
	switch {
	case !ann:
	case s.cluster != nil:
		// Every key unlinked, also when another failed.
		var gone []string
		for i, c := range cmds {
			if c.Err() == nil {
				gone = append(gone, keys[i])
			}
		}
		s.announceAfter(ctx, "del", gone)
	case err == nil:
		s.published("del", keys, pubs)
	}
	return n, err
}

// globEscape escapes the characters SCAN MATCH treats as pattern syntax,
// so a literal (a key prefix) matches only itself.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for i := range len(s) { // bytes, not runes: a prefix need not be UTF-8
		if strings.IndexByte(`*?[]\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
