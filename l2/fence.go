package l2

import (
	"context"
	"errors"
	"time"

	"github.com/cachekit-io/cachekit-go/l2/internal/fence"
	"github.com/redis/go-redis/v9"
)

// ErrOutcomeUnknown is matched (errors.Is) by the *BackendError of a write
// whose request may have reached Redis although no reply said so: it timed
// out, its connection broke after sending, or its caller stopped waiting
// for it on the auto-pipelined stream. Redis may or may not have applied
// it. With fencing (Store.Fence) it can no longer apply once the Store's
// next command to that server has been sent; a write refused before
// sending (an open breaker, a fence not yet done) does not match it.
var ErrOutcomeUnknown = errors.New("l2: the write's outcome is unknown")

// FenceStats counts the fences of a Store (Store.Fence).
type FenceStats struct {
	// On reports whether every write whose outcome is unknown is fenced:
	// Fence was called, no failed connection has yet been found
	// unfenceable, and every open connection is watched (PreDialed 0).
	On bool
	// Fenced counts failed connections Redis killed, or found already
	// gone, before this Store sent anything more to that server.
	Fenced uint64
	// Unfenced counts failed connections that could not be fenced: NoID
	// plus Refused. Their bytes may still land late.
	Unfenced uint64
	// NoID counts failed connections whose client ID was not read at
	// their handshake (a server or proxy without HELLO, Redis before 6).
	NoID uint64
	// Refused counts failed connections whose kill Redis answered with an
	// error: an ACL without +client|kill, a managed service that removed
	// CLIENT KILL (after one refusal no later failure of that server is
	// tried).
	Refused uint64
	// PreDialed is how many open connections are not watched: dialed
	// before Fence (a client pinged before it was handed over) and in use
	// when Fence retired the idle ones. It falls as they close.
	PreDialed uint64
	// Held counts writes that waited for a fence before leaving.
	Held uint64
}

// Fence makes the Store fence its failed connections: every connection
// of the go-redis client (of every node of a cluster or ring, those it
// knows now and those it adds later) reports its client ID at its
// handshake (read from the HELLO reply go-redis sends first: no extra
// command) and, when it fails while a request may be on its way (a read
// or write error or deadline after its handshake), is killed by Redis
// (CLIENT KILL ID, on a connection of its own) before any byte of this
// Store leaves again for that server: a write waits, within its deadline,
// until the kill has run (reads wait too), and once it has, the
// connection's bytes were applied before it or never will be. refused,
// if not nil, hears each failed connection that cannot be fenced (see
// FenceStats.Unfenced), at most once per server and reason, as a
// *BackendError (matching ErrRefused when Redis refused the kill).
//
// Connections the client dialed before Fence (a client pinged before it
// was handed over, MinIdleConns) are retired when idle: each is taken
// from the pool and discarded, so the pool dials anew; one in use at that
// instant is counted in FenceStats.PreDialed until it closes.
//
// A connection that failed is closed with a TCP reset, so that the kernel
// drops what it has not sent. A subscribed connection (SUBSCRIBE and its
// kind) is never fenced: its reads time out while it waits. The kill asks
// first whether the ID is still the failed connection's (a restarted
// server numbers its connections anew): CLIENT INFO and CLIENT LIST ID,
// or CLIENT ID and CLIENT LIST before Redis 6.2. Any reply ends the kill;
// a kill is tried again only while the server does not answer, at most
// 17 times a second per server.
//
// Call it once, before the Store is used; it adds a hook to the client
// and its nodes (go-redis has no way to remove one: after Close the hook
// only passes through). It returns ErrStreamRefused for a client type it
// cannot hook (not go-redis's Client, ClusterClient or Ring).
func (s *Store) Fence(refused func(error)) error {
	if s.rdb == nil {
		return ErrStreamRefused
	}
	f := fence.New(func(err error) {
		if refused != nil {
			refused(fail("fence", classify(err)))
		}
	}, refusedReply)
	ctx := context.Background()
	watch := func(n *redis.Client) { f.Watch(ctx, n) }
	each := func(ctx context.Context, n *redis.Client) error { watch(n); return nil }
	switch c := s.rdb.(type) {
	case *redis.Client:
		watch(c)
	case *redis.ClusterClient:
		// The nodes it makes from now on, then those it has (ForEachShard
		// reads the slot map first: bounded, a cluster that does not
		// answer has nodes made later).
		c.OnNewNode(watch)
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		_ = c.ForEachShard(sctx, each)
		cancel()
	case *redis.Ring:
		c.OnNewNode(watch)
		_ = c.ForEachShard(ctx, each)
	default:
		f.Close()
		return ErrStreamRefused
	}
	s.fencer = f
	return nil
}

// FenceStats returns the Store's fence counters (zero without Fence).
func (s *Store) FenceStats() FenceStats {
	if s.fencer == nil {
		return FenceStats{}
	}
	st := s.fencer.Stats()
	return FenceStats{On: st.On, Fenced: st.Fenced, Unfenced: st.Unfenced, NoID: st.NoID, Refused: st.Refused,
		PreDialed: st.PreDialed, Held: st.Held}
}
