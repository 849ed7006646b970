package l2

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/redis/go-redis/v9"
)

// Publish sends each message in msgs on channel, in one pipelined round
// trip when there are several. Pub/sub delivery is fire-and-forget: a nil
// error means Redis accepted the messages, not that anyone received them.
func (s *Store) Publish(ctx context.Context, channel string, msgs ...[]byte) error {
	if err := s.check("publish"); err != nil {
		return err
	}
	switch len(msgs) {
	case 0:
		return nil
	case 1:
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

// AnnounceWrites makes the Store announce every key it writes on channel
// (pausing for 30 s after Redis refuses a PUBLISH),
// for the Clients that listen there (Subscribe: those whose Redis refuses
// tracking): Set, Delete, Fill,
// FillMany and SetIfDigest publish "ck1 <source> <key>" (source is random
// per Store; the key is the Redis key, already stored in that Redis in the
// clear; values never travel) in the same round trip or script where they
// can. MSet, the conditional sets, the TTL changes, SwapMany and Unlink do
// not: their callers announce what they wrote with Announce, if they must. A write whose
// announcement failed reports a *BackendError with Op "publish": the write
// itself went through. Call it before the Store is used.
func (s *Store) AnnounceWrites(channel string) {
	var id [sourceBytes]byte
	_, _ = rand.Read(id[:])
	s.channel = channel
	s.source = []byte(invalidationMagic + hex.EncodeToString(id[:]) + " ")
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
// trip for several); it does nothing when the Store does not announce.
func (s *Store) Announce(ctx context.Context, keys ...string) error {
	if !s.announcing() {
		return nil
	}
	msgs := make([][]byte, len(keys))
	for i, k := range keys {
		msgs[i] = s.announcement(k)
	}
	return s.counted(s.Publish(ctx, s.channel, msgs...))
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

// PublishFailures counts the attempts to publish announcements that failed
// (sent beside a write, by Announce; not those a script sends, whose
// failure the script ignores): the writes themselves went through.
func (s *Store) PublishFailures() uint64 { return s.pubFails.Load() }

// setPublish is Set announcing key: on a standalone or failover client
// SET and PUBLISH are sent together (one pipelined round trip, or one after
// the other on the stream); on a cluster client PUBLISH is sent once SET
// answered. A failed SET is reported with Op "set" (and nothing is
// published); a SET that succeeded followed by a failed PUBLISH with Op
// "publish".
func (s *Store) setPublish(ctx context.Context, set *redis.StatusCmd, key string, large bool) error {
	pub := redis.NewIntCmd(ctx, "publish", s.channel, s.announcement(key))
	if s.cluster != nil {
		if err := s.send(ctx, large, set); err != nil {
			return fail("set", err)
		}
		if err := set.Err(); err != nil {
			return fail("set", err)
		}
		if err := s.send(ctx, false, pub); err != nil {
			return s.counted(fail("publish", err))
		}
		return s.counted(fail("publish", pub.Err()))
	}
	if err := s.send(ctx, large, set, pub); err != nil {
		return fail("set", err)
	}
	if err := set.Err(); err != nil {
		return fail("set", err)
	}
	return s.counted(fail("publish", pub.Err()))
}

// deletePublish is Delete announcing keys: sent with the DELs on a
// standalone or failover client, after them on a cluster client. Errors
// are reported as for setPublish, with Op "del" or "publish".
func (s *Store) deletePublish(ctx context.Context, keys []string) (int64, error) {
	if s.cluster != nil {
		n, err := s.deleteCounted(ctx, keys)
		if err != nil {
			return n, fail("del", err)
		}
		return n, fail("publish", s.Announce(ctx, keys...)) // counted there
	}
	pubs := make([]redis.Cmder, len(keys))
	for i, k := range keys {
		pubs[i] = redis.NewIntCmd(ctx, "publish", s.channel, s.announcement(k))
	}
	n, err := s.deleteCounted(ctx, keys, pubs...)
	if err != nil {
		return n, fail("del", err)
	}
	for _, c := range pubs {
		if err := c.Err(); err != nil {
			return n, s.counted(fail("publish", err))
		}
	}
	return n, nil
}
