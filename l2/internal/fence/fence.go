// Package fence keeps an l2.Store's writes in order across its
// connections: it watches every connection of the go-redis clients it
// hooks (reading each one's Redis client ID from its HELLO reply) and
// kills a failed one on its server before anything more leaves for it.
//
// Order across connections. A write whose connection fails while its bytes
// may be on their way (a timeout, a reset, a write cut short) has an
// unknown outcome, and its bytes can still reach Redis later: a delayed or
// retransmitted segment, a proxy or middlebox holding them. A later write
// on another connection, this Store's next Set or a retry, could then be
// overtaken by the earlier one. A fence stops that: the failed connection
// is killed by Redis (CLIENT KILL ID, on another connection) before any
// byte of this Store leaves again for that server; once Redis has run the
// kill, the connection's bytes were applied before it or never will be.
//
// # Invariants
//
//   - A connection is fenced at most once, at its first failure after its
//     handshake (HELLO's reply read whole); a subscribed connection never.
//   - While a fence of a server runs, no Write to that server leaves (it
//     waits within its write deadline, then fails without sending).
//   - One kill loop per server (gate) fences its failed connections in
//     turn on one killer connection, dialed afresh only after a try the
//     server did not answer; tries the server does not answer back off
//     from 60 ms to 500 ms apart, come 60 ms apart while a write waits,
//     and a write that comes to wait brings the next one forward, never
//     closer than 60 ms to the last: at most 17 dials a second per
//     server, whatever fails.
//   - Any reply ends a kill: the connection was killed, found gone or gone
//     with a restart (fenced), or the server answered CLIENT KILL with an
//     error (unfenced: refused). A reply refusing a preparatory command
//     (CLIENT INFO or CLIENT LIST ID before Redis 6.2, an ACL) selects the
//     next way to ask; only a try the server did not answer is tried again.
//   - Close ends every wait and every kill, and closes the killers.
package fence

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Stats counts a Fencer's fences; l2.FenceStats documents each field.
type Stats struct {
	On                      bool
	Fenced                  uint64
	Unfenced, NoID, Refused uint64
	PreDialed               uint64
	Held                    uint64
	// Dials counts the killers' dials (not in l2.FenceStats: a bound the
	// tests hold).
	Dials uint64
}

// Fencer fences the failed connections of the go-redis clients it watches
// (l2.Store.Fence documents what a fence is and covers): a gate per
// server, and the goroutines that run the kills.
type Fencer struct {
	bg     context.Context
	stop   context.CancelFunc
	closed atomic.Bool
	wg     sync.WaitGroup
	// refused reports a failed connection that could not be fenced, once
	// per gate and reason; it may be nil. refusal tells a reply refusing
	// CLIENT KILL.
	refused func(error)
	refusal func(error) bool

	mu    sync.Mutex
	gates map[string]*gate             // by the server's network address
	nodes map[*redis.Client]*fenceHook // the clients watched; under mu

	fenced, noID, refusedN, held, dials atomic.Uint64
}

// New returns a Fencer. refused hears each failed connection that cannot
// be fenced (at most once per server and reason; it may be nil), and
// refusal tells a reply that refuses CLIENT KILL (NOPERM, a removed
// command) from another error reply.
func New(refused func(error), refusal func(error) bool) *Fencer {
	f := &Fencer{refused: refused, refusal: refusal, gates: map[string]*gate{}, nodes: map[*redis.Client]*fenceHook{}}
	f.bg, f.stop = context.WithCancel(context.Background())
	return f
}

// Watch hooks node, one go-redis client (a cluster's or ring's node, or
// the standalone client itself), once however often it is called: every
// connection it dials from now on is watched. Its connections dialed
// before (a client pinged before it was handed over, MinIdleConns) are
// not: the idle ones of its command pool are retired (each taken from the
// pool and discarded, so the pool dials through the hook again), and the
// others (in use at this instant, or a pipeline pool's) stay counted in
// Stats.PreDialed until they close.
func (f *Fencer) Watch(ctx context.Context, node *redis.Client) {
	f.mu.Lock()
	if f.nodes[node] != nil || f.closed.Load() {
		f.mu.Unlock()
		return
	}
	h := &fenceHook{f: f, opts: node.Options()}
	f.nodes[node] = h
	f.mu.Unlock()
	node.AddHook(h)
	h.retire(ctx, node)
}

// Stats returns the Fencer's counters.
func (f *Fencer) Stats() Stats {
	st := Stats{Fenced: f.fenced.Load(), NoID: f.noID.Load(), Refused: f.refusedN.Load(), Held: f.held.Load(),
		Dials: f.dials.Load()}
	st.Unfenced = st.NoID + st.Refused
	f.mu.Lock()
	for node, h := range f.nodes {
		st.PreDialed += h.preDialed(node)
	}
	f.mu.Unlock()
	st.On = st.Unfenced == 0 && st.PreDialed == 0
	return st
}

// Close stops the Fencer: held writes go, kills in progress end, killers
// close. It is idempotent.
func (f *Fencer) Close() {
	f.mu.Lock()
	if !f.closed.CompareAndSwap(false, true) {
		f.mu.Unlock()
		return
	}
	f.stop()
	gates := make([]*gate, 0, len(f.gates))
	for _, g := range f.gates {
		gates = append(gates, g)
	}
	f.mu.Unlock()
	for _, g := range gates {
		g.open()
	}
	f.wg.Wait()
}

// Held reports whether err is a write a fence held past its deadline:
// nothing of it was sent.
func Held(err error) bool { return errors.Is(err, errFenceWait) }

// errFenceWait is the error of a write that could not leave before its
// deadline because a fence was still running: nothing of it was sent. It
// is a timeout, as a write deadline is (it wraps os.ErrDeadlineExceeded),
// which go-redis and IsTransient treat as one.
var errFenceWait = fmt.Errorf("l2: write held: a failed connection to the server is being fenced: %w", os.ErrDeadlineExceeded)

// goKill starts fn in a goroutine Close waits for, unless the Fencer is
// closed.
func (f *Fencer) goKill(fn func()) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return false
	}
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
	return true
}

// fenceHook watches the connections one client dials.
type fenceHook struct {
	f    *Fencer
	opts *redis.Options
	// alive counts its watched connections not yet closed: the client's
	// pool holding more (PoolStats().TotalConns) holds connections dialed
	// before the hook.
	alive atomic.Int64
}

// DialHook implements redis.Hook.
func (h *fenceHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil || conn == nil || h.f.closed.Load() {
			return conn, err
		}
		return h.f.wrap(conn, h), nil
	}
}

// ProcessHook implements redis.Hook.
func (*fenceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (*fenceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// retireRounds bounds the rounds of retire: a connection still idle after
// them was in use at every round.
const retireRounds = 3

// retire discards node's idle connections dialed before the hook: each
// round takes idle connections out of the pool (a PING on an ephemeral
// Conn takes an idle one when there is one), holding them, until a PING
// had to dial (the pool's misses grew: none was idle), then discards them,
// so the pool dials anew, through the hook, when it needs one. A round
// takes at most the pool's size, so it never waits for a turn.
func (h *fenceHook) retire(ctx context.Context, node *redis.Client) {
	ctx, cancel := context.WithTimeout(ctx, killTimeout)
	defer cancel()
	for range retireRounds {
		st := node.PoolStats()
		if poolConns(st) <= h.alive.Load() || st.IdleConns == 0 {
			return
		}
		var taken []*redis.Conn
		for len(taken) < node.Options().PoolSize {
			cn := node.EphemeralConn()
			taken = append(taken, cn)
			if cn.Ping(ctx).Err() != nil || node.PoolStats().Misses != st.Misses {
				break
			}
		}
		for _, cn := range taken {
			_ = cn.Close()
		}
	}
}

// preDialed is how many of node's connections are not watched: dialed
// before the hook and not retired.
func (h *fenceHook) preDialed(node *redis.Client) uint64 {
	return uint64(max(0, poolConns(node.PoolStats())-h.alive.Load()))
}

// poolConns counts the open connections of a client's pools: commands',
// pipelines' and subscriptions'.
func poolConns(st *redis.PoolStats) int64 {
	n := int64(st.TotalConns) + int64(st.PubSubStats.Active)
	if st.PipelineStats != nil {
		n += int64(st.PipelineStats.TotalConns)
	}
	return n
}

// wrap returns conn watched by the gate of its server.
func (f *Fencer) wrap(conn net.Conn, h *fenceHook) net.Conn {
	ra := conn.RemoteAddr()
	key := ra.Network() + "/" + ra.String()
	f.mu.Lock()
	g := f.gates[key]
	if g == nil {
		g = &gate{f: f, network: ra.Network(), addr: ra.String(), opts: h.opts, wake: make(chan struct{}, 1)}
		f.gates[key] = g
	}
	f.mu.Unlock()
	h.alive.Add(1)
	fc := &fconn{Conn: conn, g: g, h: h, born: time.Now(), local: conn.LocalAddr().String()}
	if sc, ok := conn.(syscall.Conn); ok {
		// go-redis health-checks an idle connection through its file
		// descriptor, when it can reach one.
		return &fsysconn{fconn: fc, sc: sc}
	}
	return fc
}
