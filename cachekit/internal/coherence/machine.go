package coherence

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/cachekit-io/cachekit-go/l2"
)

// Mode names the mechanism that keeps a process's copies of Redis keys (an
// L1) coherent with Redis, as a Machine decides it.
type Mode int32

// The modes, from none to the strongest. Only ModeNone says the copies
// must not be kept or made.
const (
	// ModeNone: nothing vouches for the copies: starting, or the tracking
	// (or, in fallback, the subscription) was lost, or tracking is refused
	// and no fallback is allowed.
	ModeNone Mode = iota
	// ModeTracking: every node is tracked (CLIENT TRACKING BCAST); every
	// write of every writer is reported.
	ModeTracking
	// ModePubSub: tracking is refused; the subscription to the
	// announcement channel is up and reports the writes of Stores that
	// announce (l2.Store.AnnounceWrites). Other writers are not reported.
	ModePubSub
	// ModeLifetime: tracking is refused and so is the subscription (or no
	// channel was given): no write is reported; only a copy's bounded
	// lifetime limits how stale it gets.
	ModeLifetime
)

// String returns "none", "tracking", "pubsub" or "lifetime".
func (m Mode) String() string {
	switch m {
	case ModeTracking:
		return "tracking"
	case ModePubSub:
		return "pubsub"
	case ModeLifetime:
		return "lifetime"
	}
	return "none"
}

// Handler receives what a Machine decides and hears. Its
// functions are called one at a time.
type Handler struct {
	// Invalidate receives the keys under the prefix reported written,
	// without the prefix (nil: every key), from tracking or, in
	// ModePubSub, from the subscription.
	Invalidate func(keys []string)
	// Mode receives each change of mode, with why when the new mode is
	// ModeNone because something was lost or refused. A change to ModeNone
	// means the copies held so far may be stale.
	Mode func(m Mode, why error)
	// Refused is called the first time the server refuses what a mode
	// needs, once per mechanism for the Machine's life (Stats
	// counts each refusal that follows an up): what is "tracking" or
	// "subscribe"; err matches l2.ErrRefused.
	Refused func(what string, err error)
}

// Stats is a snapshot of a Machine's counters (cachekit.InvalidationStats
// documents each): the mode's name, whether it is tracking, and the
// counts of messages received, keys applied, flushes, losses, refusals
// and failed announcements.
type Stats struct {
	Mode                                                          string
	Tracking                                                      bool
	Received, Applied, Flushes, Losses, Refusals, PublishFailures uint64
}

// Machine runs the state machine that picks a Mode: it keeps a l2.Tracker
// on the prefix, and while the l2.Tracker is refused (and fallback is
// allowed) a Subscribe on the channel. Its invariants:
//
//   - ModeTracking exactly while the l2.Tracker is up; the subscription is
//     stopped when tracking comes up, so no mode keeps a subscription that
//     nothing uses.
//   - A refusal moves to a fallback only through a refusal: a l2.Tracker that
//     merely cannot connect leaves ModeNone until it can.
//   - ModePubSub exactly while tracking is refused and the subscription
//     is up; its loss is ModeNone (the caller drops its copies), not
//     ModeLifetime.
//   - ModeLifetime only after the subscription itself was refused, or
//     with no channel.
//   - Events of a stopped subscription are ignored.
type Machine struct {
	tr       *l2.Tracker
	prefix   string
	channel  string
	fallback bool
	store    *l2.Store
	h        Handler
	settled  chan struct{}
	settleOn sync.Once
	ctx      context.Context
	cancel   context.CancelFunc

	mu         sync.Mutex // serializes handler calls and guards what follows
	mode       Mode
	trackUp    bool
	trackRef   bool // tracking refused since it was last up
	sub        *l2.Tracker
	subs       []*l2.Tracker // every subscription started, for Close
	subUp      bool
	subRef     bool
	trackErr   error
	lastReason error
	told       [2]bool // Refused called for tracking, for subscribe
	stats      Stats
}

// Start starts a Machine for the keys under prefix of s and returns at
// once. channel is where writes are announced ("" for none); fallback
// allows ModePubSub and ModeLifetime when tracking is refused (without it
// a refusal leaves ModeNone). The l2.Tracker and any subscription open
// connections of their own (see l2.Store.Track and Subscribe).
func Start(s *l2.Store, prefix, channel string, fallback bool, h Handler) (*Machine, error) {
	co := &Machine{prefix: prefix, channel: channel, fallback: fallback, store: s, h: h, settled: make(chan struct{})}
	co.ctx, co.cancel = context.WithCancel(context.Background())
	tr, err := s.Track(prefix, l2.TrackingHandler{
		Invalidate: co.invalidate(nil),
		Down: func(err error) {
			co.event(func() { co.trackUp, co.lastReason = false, err })
		},
		Up: func() {
			co.event(func() { co.trackUp, co.trackRef, co.trackErr = true, false, nil })
		},
		Refused: func(err error) {
			co.event(func() {
				co.trackRef, co.trackErr, co.lastReason = true, err, err
				co.refused(0, "tracking", err)
			})
		},
	})
	if err != nil {
		co.cancel()
		return nil, err
	}
	co.tr = tr
	go func() {
		select {
		case <-tr.Settled():
			co.mu.Lock()
			// Unreachable, or refused with nothing to fall back on: settled.
			// Refused with a fallback: the subscription settles it.
			if !co.trackRef || !co.fallback || co.mode != ModeNone {
				co.settle()
			}
			co.mu.Unlock()
		case <-co.ctx.Done():
		}
	}()
	return co, nil
}

// Settled is closed once the Machine first knows how things stand: a
// mode other than ModeNone, tracking refused without fallback, or Redis
// unreachable. A Redis that neither answers nor refuses leaves it open.
func (co *Machine) Settled() <-chan struct{} { return co.settled }

// Await waits until Settled is closed or d has passed.
func (co *Machine) Await(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-co.settled:
	case <-t.C:
	}
}

func (co *Machine) settle() { co.settleOn.Do(func() { close(co.settled) }) }

// Mode returns the current mode.
func (co *Machine) Mode() Mode {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.mode
}

// TrackingRefused returns the refusal tracking last met, nil when
// tracking was not refused since it was last up.
func (co *Machine) TrackingRefused() error {
	co.mu.Lock()
	defer co.mu.Unlock()
	return co.trackErr
}

// Stats returns the counters.
func (co *Machine) Stats() Stats {
	co.mu.Lock()
	st := co.stats
	co.mu.Unlock()
	st.Mode, st.Tracking = co.Mode().String(), co.Mode() == ModeTracking
	st.PublishFailures = co.store.PublishFailures()
	return st
}

// refused counts a refusal and reports the first of mechanism i. The
// caller holds mu.
func (co *Machine) refused(i int, what string, err error) {
	co.stats.Refusals++
	if !co.told[i] && co.h.Refused != nil {
		co.h.Refused(what, err)
	}
	co.told[i] = true
}

// Close stops the l2.Tracker and every subscription and waits for their
// goroutines. It is idempotent and returns nil.
func (co *Machine) Close() error {
	co.cancel()
	_ = co.tr.Close()
	co.mu.Lock()
	subs := co.subs
	co.mu.Unlock()
	for _, s := range subs {
		_ = s.Close()
	}
	return nil
}

// invalidate passes keys on under mu, from the l2.Tracker (current nil) or
// from a subscription while current says it is the current one and the
// mode is ModePubSub.
func (co *Machine) invalidate(current func() bool) func([]string) {
	return func(keys []string) {
		co.mu.Lock()
		defer co.mu.Unlock()
		if current != nil && (!current() || co.mode != ModePubSub) {
			return
		}
		co.stats.Received++
		if keys == nil {
			co.stats.Flushes++
		} else {
			// The keys under the prefix, without it, in place (the
			// message is the Machine's own).
			out := keys[:0]
			for _, k := range keys {
				if key, ok := strings.CutPrefix(k, co.prefix); ok {
					out = append(out, key)
				}
			}
			if keys = out; len(keys) == 0 {
				return
			}
			co.stats.Applied += uint64(len(keys))
		}
		if co.h.Invalidate != nil {
			co.h.Invalidate(keys)
		}
	}
}

// event applies change under mu, starts or stops the subscription it
// calls for, and reports a change of mode.
func (co *Machine) event(change func()) {
	co.mu.Lock()
	defer co.mu.Unlock()
	change()
	co.arrange()
}

// arrange starts the subscription when tracking is refused and a fallback
// is allowed, stops it when tracking is up, and reports a change of mode.
// The caller holds mu.
func (co *Machine) arrange() {
	wantSub := co.trackRef && !co.trackUp && co.fallback && co.channel != ""
	switch {
	case wantSub && co.sub == nil && co.ctx.Err() == nil:
		co.startSub()
	case !wantSub && co.sub != nil:
		co.sub.Stop() // its goroutines end soon; Close waits for them
		co.sub, co.subUp, co.subRef = nil, false, false
	}
	m := ModeNone
	switch {
	case co.trackUp:
		m = ModeTracking
	case !co.trackRef || !co.fallback:
	case co.channel == "" || co.subRef:
		m = ModeLifetime
	case co.subUp:
		m = ModePubSub
	}
	if m == co.mode {
		return
	}
	if m == ModeNone {
		co.stats.Losses++
		co.stats.Flushes++
	}
	co.mode = m
	if co.h.Mode != nil {
		why := error(nil)
		if m == ModeNone {
			why = co.lastReason
		}
		co.h.Mode(m, why)
	}
	if m != ModeNone {
		co.settle()
	}
}

// startSub subscribes to the channel. The caller holds mu; the new
// l2.Tracker's handlers take mu, after the caller released it.
func (co *Machine) startSub() {
	var sub *l2.Tracker
	current := func() bool { return co.sub != nil && co.sub == sub }
	h := l2.TrackingHandler{
		Down: func(err error) {
			co.event(func() {
				if current() {
					co.subUp, co.lastReason = false, err
				}
			})
		},
		Up: func() {
			co.event(func() {
				if current() {
					co.subUp, co.subRef = true, false
				}
			})
		},
		Refused: func(err error) {
			co.event(func() {
				if current() {
					co.subRef, co.lastReason = true, err
					co.refused(1, "subscribe", err)
				}
			})
		},
	}
	// The handlers read sub only under mu, which the caller holds until
	// sub is set below.
	h.Invalidate = co.invalidate(current)
	s, err := co.store.Subscribe(co.channel, h)
	if err != nil {
		return // the Store is closed: nothing to fall back on
	}
	sub = s
	co.sub = s
	co.subs = append(co.subs, s)
	go func() {
		select {
		case <-s.Settled():
			co.mu.Lock()
			if current() && (co.subRef || !co.subUp) {
				co.settle() // refused, or unreachable: New need not wait on
			}
			co.mu.Unlock()
		case <-co.ctx.Done():
		}
	}()
}
