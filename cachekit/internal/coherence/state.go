package coherence

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// State is one Client's invalidation state. A nil *State is invalidation
// off.
type State struct {
	Channel  string        // writes are announced there (l2.Store.AnnounceWrites)
	Announce bool          // Invalidation.NoAnnounce off
	Lifetime time.Duration // the fallback's L1 lifetime
	Strict   bool          // Invalidation.RequireTracking
	Co       *Machine      // nil until the owner started it
	// l1cap is what a ticket reads: -1 while L1 may not be written, 0 in
	// tracking mode, else the longest an L1 entry may live, in ns.
	l1cap atomic.Int64
	mode  atomic.Int32 // Mode
	// renewing holds the keys a renewal is running for; renewals counts
	// the renewals, which Stop waits for. stopped (under mu) refuses new
	// ones from then on.
	renewing sync.Map
	renewals sync.WaitGroup
	mu       sync.Mutex
	stopped  bool
}

// New returns the State of a Client that has not yet heard a mode: L1 may
// not be written.
func New(channel string, announce bool, lifetime time.Duration, strict bool) *State {
	s := &State{Channel: channel, Announce: announce, Lifetime: lifetime, Strict: strict}
	s.l1cap.Store(-1)
	return s
}

// Heard returns the current mode; ModeNone when invalidation is off.
func (s *State) Heard() Mode {
	if s == nil {
		return ModeNone
	}
	return Mode(s.mode.Load())
}

// Wakes reports whether the current mode tells of writes (tracking, or
// the pub/sub fallback), so a caller waiting for a key can wait for its
// invalidation instead of polling.
func (s *State) Wakes() bool {
	m := s.Heard()
	return m == ModeTracking || m == ModePubSub
}

// L1Cap is what an L1 write may do now: -1 none, 0 unbounded, else the
// longest an entry may live, in ns.
func (s *State) L1Cap() int64 { return s.l1cap.Load() }

// SetMode records mode m and the L1 cap it implies, and returns the mode
// before it.
func (s *State) SetMode(m Mode) (prev Mode) {
	prev = Mode(s.mode.Swap(int32(m)))
	switch m {
	case ModeNone:
		s.l1cap.Store(-1)
	case ModeTracking:
		s.l1cap.Store(0)
	default:
		s.l1cap.Store(int64(s.Lifetime))
	}
	return prev
}

// Renew runs renew in its own goroutine unless a renewal of key is
// running or Stop was called.
func (s *State) Renew(key string, renew func()) {
	if _, busy := s.renewing.LoadOrStore(key, struct{}{}); busy {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return
	}
	s.renewals.Go(func() {
		defer s.renewing.Delete(key)
		renew()
	})
}

// WaitRenewals waits for the renewals running now.
func (s *State) WaitRenewals() { s.renewals.Wait() }

// Stop refuses new renewals and waits for those running (Close).
func (s *State) Stop() {
	s.mu.Lock()
	s.stopped = true
	s.mu.Unlock()
	s.renewals.Wait()
}

// Refused logs a mechanism's first refusal loudly on log: its meaning,
// the remedy. what is "tracking" or the subscription's.
func (s *State) Refused(log *slog.Logger, what string, err error) {
	level, msg := slog.LevelWarn, "redis refuses CLIENT TRACKING: L1 hears only writers that announce (cachekit-go) "+
		"and keeps entries at most fallback_l1_lifetime; allow CLIENT ID and CLIENT TRACKING for this user, "+
		"or set Invalidation.RequireTracking to fail New instead"
	switch {
	case what != "tracking":
		msg = "redis refuses SUBSCRIBE to the invalidation channel: L1 entries live at most fallback_l1_lifetime " +
			"and no other Client's write reaches L1 sooner; grant this user the channel (ACL SETUSER <user> &<channel>)"
	case s.Strict:
		level, msg = slog.LevelError, "redis refuses CLIENT TRACKING and Invalidation.RequireTracking is set: "+
			"L1 is bypassed until redis allows CLIENT ID and CLIENT TRACKING for this user"
	case !s.Announce:
		msg = "redis refuses CLIENT TRACKING and Invalidation.NoAnnounce is set: L1 entries live at most " +
			"fallback_l1_lifetime; allow CLIENT ID and CLIENT TRACKING for this user"
	}
	log.LogAttrs(context.Background(), level, "cachekit: "+msg, slog.String("cause", err.Error()),
		slog.String("channel", s.Channel), slog.Duration("fallback_l1_lifetime", s.Lifetime))
}
