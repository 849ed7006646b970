package l2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// publish sends each message in msgs on channel, in one pipelined round
// trip when there are several. Pub/sub delivery is fire-and-forget: a nil
// error means Redis accepted the messages, not that anyone received them.
func (s *Store) publish(ctx context.Context, channel string, msgs ...[]byte) error {
	if err := s.check("publish"); err != nil {
		return err
	}
	switch {
	case len(msgs) == 0:
		return nil
	case s.cluster != nil && channel == s.channel:
		// Each announcement to its key's master (routeKey), on the stream.
		cmds := make([]redis.Cmder, len(msgs))
		for i, m := range msgs {
			cmds[i] = redis.NewIntCmd(ctx, "publish", channel, m)
		}
		if err := s.send(ctx, false, cmds...); err != nil {
			return fail("publish", err)
		}
		for _, c := range cmds {
			if err := c.Err(); err != nil {
				return fail("publish", err)
			}
		}
		return nil
	case len(msgs) == 1:
		return fail("publish", s.rdb.Publish(ctx, channel, msgs[0]).Err())
	}
	cmds := make([]*redis.IntCmd, len(msgs))
	_, _ = s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, m := range msgs {
			cmds[i] = p.Publish(ctx, channel, m)
		}
		return nil
	})
	for _, c := range cmds {
		if err := c.Err(); err != nil {
			return fail("publish", err)
		}
	}
	return nil
}

// invalidationMagic starts every announcement: format version 1.
const invalidationMagic = "ck1 "

// sourceBytes is the size of a Store's random source id, in bytes (hex
// encoded in announcements).
const sourceBytes = 8

// AnnounceWrites makes the Store announce on channel every key whose value
// it changes, for the Clients that listen there (Subscribe: those whose
// Redis refuses tracking): it publishes "ck1 <source> <key>" (source is
// random per Store; the key is the Redis key, already stored in that Redis
// in the clear; values never travel) with the write itself:
//   - SetCond, SetAbsentMany, Expire, Fill, FillMany, SetIfDigest and
//     SwapMany publish from inside their script, after the write, for the
//     keys they wrote;
//   - Set, MSet, Delete, UnlinkMatching and Release's DEL over maxmemory
//     send a PUBLISH per key after their commands, in the same pipeline or
//     stream send, for every key they name (one Delete found missing
//     included). On a cluster client those PUBLISHes go once the write
//     answered, each to its key's master: one sent beside the write could
//     be heard before the write is applied (a write a master redirects,
//     MOVED or ASK, is sent again after it).
//
// The leases, locks and the marker (Acquire, AcquireMany, Renew,
// RenewMany, Release's compare-and-delete, TryLock, Unlock, Marker) are
// not announced: no Client caches them. A write whose announcement failed returns the
// write's own outcome; failed, if not nil, hears the failure (op as the
// write's *BackendError names it, the keys, the error) and
// PublishFailures counts it. After Redis refuses a PUBLISH the Store
// announces nothing for 30 s. Call it before the Store is used.
func (s *Store) AnnounceWrites(channel string, failed func(op string, keys []string, err error)) {
	var id [sourceBytes]byte
	_, _ = rand.Read(id[:])
	s.channel = channel
	s.source = []byte(invalidationMagic + hex.EncodeToString(id[:]) + " ")
	s.pubFailed = failed
}

// announceFailed counts err, the failed announcement of op's write of
// keys, tells the Store's handler, and returns nil: the write went
// through.
func (s *Store) announceFailed(op string, keys []string, err error) error {
	if err = s.counted(fail("publish", err)); err != nil && s.pubFailed != nil {
		s.pubFailed(op, keys, err)
	}
	return nil
}

// announcing reports whether the Store announces writes now: it was made
// to, and Redis has not refused a PUBLISH in the last 30 s (an ACL user
// without the channel right: a publish nothing can hear; it is tried
// again after that, in case the right was granted).
func (s *Store) announcing() bool {
	if s.channel == "" {
		return false
	}
	at := s.pubRefused.Load()
	return at == 0 || time.Since(time.Unix(0, at)) > trackRefusedRetry
}

// announceArgs returns the channel and message a script announces key
// with: "" and nil when the Store does not announce now.
func (s *Store) announceArgs(key string) (string, []byte) {
	if !s.announcing() {
		return "", nil
	}
	return s.channel, s.announcement(key)
}

// announcement returns the message announcing key, nil when the Store does
// not announce.
func (s *Store) announcement(key string) []byte {
	if s.channel == "" {
		return nil
	}
	return append(append(make([]byte, 0, len(s.source)+len(key)), s.source...), key...)
}

// Announce publishes the announcement of each key (one pipelined round
// trip for several; on a cluster each to its key's master, side by side),
// for a key written other than through the Store; it does nothing when the
// Store does not announce.
func (s *Store) Announce(ctx context.Context, keys ...string) error {
	if !s.announcing() {
		return nil
	}
	msgs := make([][]byte, len(keys))
	for i, k := range keys {
		msgs[i] = s.announcement(k)
	}
	return s.counted(s.publish(ctx, s.channel, msgs...))
}

// counted counts err, an announcement's failure, in PublishFailures, and
// pauses announcements when Redis refused the PUBLISH.
func (s *Store) counted(err error) error {
	if err != nil {
		s.pubFails.Add(1)
	}
	if refusedReply(err) {
		s.pubRefused.Store(time.Now().UnixNano())
	}
	return err
}

// PublishFailures counts the announcements that failed: those of one
// write together (sent beside it, or refused inside its script), and each
// Announce. The writes themselves went through.
func (s *Store) PublishFailures() uint64 { return s.pubFails.Load() }

// setPublish is Set announcing key: on a standalone or failover client
// SET and PUBLISH are sent together (one pipelined round trip, or one after
// the other on the stream); on a cluster client PUBLISH is sent once SET
// answered. A failed SET is reported with Op "set" (and nothing is
// published); a failed PUBLISH after a SET that succeeded is the Store's
// to report (announceFailed): Set returns nil.
func (s *Store) setPublish(ctx context.Context, set *redis.StatusCmd, key string, large bool) error {
	if s.cluster != nil {
		if err := s.send(ctx, large, set); err != nil {
			return fail("set", err)
		}
		if err := set.Err(); err != nil {
			return fail("set", err)
		}
		s.announceAfter(ctx, "set", []string{key})
		return nil
	}
	pub := redis.NewIntCmd(ctx, "publish", s.channel, s.announcement(key))
	if err := s.send(ctx, large, set, pub); err != nil {
		return fail("set", err)
	}
	if err := set.Err(); err != nil {
		return fail("set", err)
	}
	return s.announceFailed("set", []string{key}, pub.Err())
}

// deletePublish is Delete announcing keys: sent with the DELs on a
// standalone or failover client, after them on a cluster client. Errors
// are reported as for setPublish, with Op "del".
func (s *Store) deletePublish(ctx context.Context, keys []string) (int64, error) {
	if s.cluster != nil {
		n, err := s.deleteCounted(ctx, keys)
		if err != nil {
			return n, fail("del", err)
		}
		s.announceAfter(ctx, "del", keys)
		return n, nil
	}
	pubs := s.publishes(ctx, keys)
	n, err := s.deleteCounted(ctx, keys, pubs...)
	if err != nil {
		return n, fail("del", err)
	}
	s.published("del", keys, pubs)
	return n, nil
}

// publishes returns the PUBLISH of each key's announcement, for a
// pipeline that writes keys to carry after its writes.
func (s *Store) publishes(ctx context.Context, keys []string) []redis.Cmder {
	pubs := make([]redis.Cmder, len(keys))
	for i, k := range keys {
		pubs[i] = redis.NewIntCmd(ctx, "publish", s.channel, s.announcement(k))
	}
	return pubs
}

// published reports the first failed command of pubs, the announcements
// of op's write of keys, to announceFailed (once for all of keys).
func (s *Store) published(op string, keys []string, pubs []redis.Cmder) {
	for _, c := range pubs {
		if err := c.Err(); err != nil {
			_ = s.announceFailed(op, keys, err)
			return
		}
	}
}

// announceAfter is, on a cluster client, the announcement of keys that op
// wrote, sent once the write answered (see AnnounceWrites): each PUBLISH
// to its key's master. A failure goes to the Store's handler (Announce
// counts it).
func (s *Store) announceAfter(ctx context.Context, op string, keys []string) {
	if len(keys) == 0 {
		return
	}
	if err := s.Announce(ctx, keys...); err != nil && s.pubFailed != nil {
		s.pubFailed(op, keys, err)
	}
}
