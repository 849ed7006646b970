package fence

// A gate per server: the writes to it wait while its failed connections
// are being fenced, and one kill loop fences them in turn.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// killTimeout bounds one try of a kill; tryEvery is the least time between
// two tries of a gate's loop (its dials at most 1/tryEvery a second), and
// maxBackoff the most while the server does not answer.
const (
	killTimeout = time.Second
	tryEvery    = 60 * time.Millisecond
	maxBackoff  = 500 * time.Millisecond
)

// gate holds the writes to one server while a failed connection to it is
// being fenced.
type gate struct {
	f             *Fencer
	network, addr string
	opts          *redis.Options

	// pending counts the failed connections queued and not yet fenced
	// (Write's lock-free test).
	pending atomic.Int32
	mu      sync.Mutex
	queue   []*fconn      // the failed connections to fence, in order; under mu
	running bool          // the kill loop runs; under mu
	clear   chan struct{} // closed when the queue empties; under mu
	// refusedKill is set once the server refused CLIENT KILL: later
	// failures are not tried.
	refusedKill atomic.Bool
	// told remembers the reasons already reported to refused; under mu.
	told map[string]bool
	// waiting counts the writes waiting now; wake brings the loop's next
	// try forward when a write comes to wait (a server back from a
	// restart lets it go then).
	waiting atomic.Int32
	wake    chan struct{}
}

// errNoID is why a connection without a client ID is not fenced.
var errNoID = errors.New("l2: no client ID was read at the connection's handshake")

// wait holds a write until no fence is pending, the deadline (zero: none)
// passes or the Fencer closes.
func (g *gate) wait(deadline time.Time) error {
	g.mu.Lock()
	ch := g.clear
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	g.f.held.Add(1)
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.wake <- struct{}{}:
	default:
	}
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		d := time.Until(deadline)
		if d <= 0 {
			return errFenceWait
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-timeout:
		return errFenceWait
	}
}

// open ends every wait (the Fencer closed).
func (g *gate) open() {
	g.mu.Lock()
	if g.clear != nil {
		close(g.clear)
		g.clear = nil
	}
	g.queue = nil
	g.pending.Store(0)
	g.mu.Unlock()
}

// fence queues c, which failed, for the kill loop: writes wait from now
// on.
func (g *gate) fence(c *fconn) {
	f := g.f
	if f.closed.Load() {
		return
	}
	switch {
	case c.id.Load() <= 0:
		f.noID.Add(1)
		g.report(errNoID)
		return
	case g.refusedKill.Load():
		f.refusedN.Add(1)
		return
	}
	g.mu.Lock()
	if len(g.queue) == 0 {
		g.clear = make(chan struct{})
	}
	g.queue = append(g.queue, c)
	g.pending.Add(1)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start && !f.goKill(g.run) {
		g.open()
	}
}

// next returns the first queued connection, or nil (and the loop stops)
// when none is left.
func (g *gate) next() *fconn {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.queue) == 0 {
		g.running = false
		return nil
	}
	return g.queue[0]
}

// settled removes the first n queued connections: fenced, or found
// unfenceable. The last one lets the writes go.
func (g *gate) settled(n int) {
	g.mu.Lock()
	n = min(n, len(g.queue))
	clear(g.queue[:n])
	g.queue = g.queue[n:]
	g.pending.Add(-int32(n))
	if len(g.queue) == 0 && g.clear != nil {
		close(g.clear)
		g.clear = nil
	}
	g.mu.Unlock()
}

// report tells the Fencer's refused, once per gate and reason.
func (g *gate) report(why error) {
	if g.f.refused == nil {
		return
	}
	g.mu.Lock()
	if g.told == nil {
		g.told = map[string]bool{}
	}
	first := !g.told[why.Error()]
	g.told[why.Error()] = true
	g.mu.Unlock()
	if first {
		g.f.refused(why)
	}
}

// run is the gate's kill loop: it fences the queued connections in turn,
// on one killer connection, until the queue is empty or the Fencer
// closes. A try the server answered ends that connection's fence; one it
// did not answer is tried again after a backoff, on a killer dialed
// afresh (a go-redis pool that failed to dial answers its last dial error,
// without dialing, for up to a second, and the server may be back well
// before that).
func (g *gate) run() {
	var k *killer
	defer func() {
		if k != nil {
			_ = k.Close()
		}
	}()
	backoff := tryEvery
	for {
		c := g.next()
		if c == nil || g.f.bg.Err() != nil {
			return
		}
		if k == nil {
			k = g.killer()
		}
		last := time.Now()
		ctx, cancel := context.WithTimeout(g.f.bg, killTimeout)
		err := g.tryKill(ctx, k, c, c.id.Load())
		cancel()
		switch {
		case g.f.bg.Err() != nil:
			return
		case err == nil:
			g.f.fenced.Add(1)
			g.settled(1)
			backoff = tryEvery
			continue
		case answered(err):
			g.refuse(err)
			backoff = tryEvery
			continue
		}
		_ = k.Close()
		k = nil
		if g.waiting.Load() > 0 {
			backoff = tryEvery // writes wait: try again as soon as the pace allows
		}
		if !g.backoff(backoff, last) {
			return
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// refuse counts the first queued connection unfenced: the server answered
// its CLIENT KILL with an error. A refusal (an ACL, a removed command)
// answers every later kill the same: the queue is counted with it, and
// later failures are not tried.
func (g *gate) refuse(err error) {
	n := 1
	if g.f.refusal(err) {
		g.refusedKill.Store(true)
		g.mu.Lock()
		n = len(g.queue)
		g.mu.Unlock()
	}
	g.f.refusedN.Add(uint64(n))
	g.report(err)
	g.settled(n)
}

// backoff waits until d after last, the start of the last try, or less
// when a write comes to wait on the gate, though never less than tryEvery
// after it; false when the Fencer closed.
func (g *gate) backoff(d time.Duration, last time.Time) bool {
	t := time.NewTimer(time.Until(last.Add(d)))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.f.bg.Done():
		return false
	case <-g.wake:
	}
	if w := time.Until(last.Add(tryEvery)); w > 0 {
		t.Reset(w)
		select {
		case <-t.C:
		case <-g.f.bg.Done():
			return false
		}
	}
	return true
}

// answered reports whether err is the server's reply, an error reply: the
// server is there, and asking again gets the same answer.
func answered(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
