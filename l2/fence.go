package l2

import (
	"errors"

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
	// On reports whether a write's unknown outcome is fenced: Fence was
	// called and no failed connection has yet been found unfenceable. A
	// caller retries a write whose outcome is unknown only while it is
	// true: the retry then leaves after the failed attempt's connection
	// is dead.
	On bool
	// Fenced counts failed connections Redis killed, or found already
	// gone, before this Store sent anything more to that server.
	Fenced uint64
	// Unfenced counts failed connections that could not be fenced: no
	// client ID was read at their handshake (a server or proxy without
	// HELLO), or Redis refused CLIENT KILL (an ACL without +client|kill, a
	// managed service that removed it). Their bytes may still land late.
	Unfenced uint64
	// Held counts writes that waited for a fence before leaving.
	Held uint64
}

// Fence makes the Store fence its failed connections: every connection
// of the go-redis client dialed from now on (of every node of a cluster
// or ring) reports its client ID at its handshake (read from the HELLO
// reply go-redis sends first: no extra command) and, when it fails while
// a request may be on its way (a read or write error or deadline after
// its handshake), is killed by Redis (CLIENT KILL ID, on a connection of
// its own) before any byte of this Store leaves again for that server: a
// write waits, within its deadline, until the kill has run (reads wait
// too), and once it has, the connection's bytes were applied before it or
// never will be. refused, if not nil, hears each failed connection that
// cannot be fenced (see FenceStats.Unfenced), at most once per server and
// reason, as a *BackendError matching ErrRefused when Redis refused the
// kill.
//
// A connection that failed is closed with a TCP reset, so that the kernel
// drops what it has not sent. A subscribed connection (SUBSCRIBE and its
// kind) is never fenced: its reads time out while it waits. The kill asks
// first (CLIENT LIST ID) whether the ID is still the failed connection's,
// since a restarted server numbers its connections anew.
//
// Call it once, before the Store is used; it adds a hook to the client
// (go-redis has no way to remove one: after Close the hook only passes
// through). A connection dialed before it is not fenced. FenceStats.On
// says whether fences work. It returns ErrStreamRefused for a client type
// it cannot hook (not go-redis's Client, ClusterClient or Ring).
func (s *Store) Fence(refused func(error)) error {
	if s.rdb == nil {
		return ErrStreamRefused
	}
	f := fence.New(func(err error) {
		if refused != nil {
			refused(fail("fence", classify(err)))
		}
	}, refusedReply)
	switch c := s.rdb.(type) {
	case *redis.Client:
		c.AddHook(f.Hook(c))
	case *redis.ClusterClient:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(f.Hook(n)) })
	case *redis.Ring:
		c.OnNewNode(func(n *redis.Client) { n.AddHook(f.Hook(n)) })
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
	return FenceStats{On: st.On, Fenced: st.Fenced, Unfenced: st.Unfenced, Held: st.Held}
}
