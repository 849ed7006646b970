package redistest

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a loopback TCP proxy in front of one server. A test switches
// its mode at any time to simulate a network fault; a mode applies to the
// connections already open as well as to new ones.
//
//	p := redistest.StartProxy(t, srv.Addr())
//	rdb := redis.NewClient(&redis.Options{Addr: p.Addr()})
//	p.BlackHole() // rdb's commands now hang until their deadline
//	p.Pass()      // and work again
type Proxy struct {
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every connection's goroutines

	mu      sync.Mutex
	mode    proxyMode
	conns   map[*proxyConn]struct{}
	closed  bool
	answers []answerRule // requests the proxy answers itself (Answer)
	// accepted counts the connections accepted (Accepted), answered the
	// requests answered by a rule (Answered).
	accepted, answered atomic.Int64

	// delayNext, when positive, is the delay the next connection to carry
	// a request takes on (DelayNext); slowDial holds each new connection
	// that long before it reaches the target (SlowDial).
	delayNext, slowDial atomic.Int64
	// delayWhen is DelayWhen's pending delay and the bytes that start it.
	delayWhen atomic.Pointer[delayMatch]
	// rate, when positive, is each direction's bandwidth per connection in
	// bytes per second (Throttle).
	rate atomic.Int64
}

// delayMatch is a delay DelayWhen arms.
type delayMatch struct {
	d     time.Duration
	match []byte
}

// proxyMode is what a Proxy does with the bytes it carries.
type proxyMode int

const (
	modePass          proxyMode = iota // forward both ways
	modeBlackHole                      // read and drop both ways
	modeReset                          // reset every client connection
	modeResetMidReply                  // forward requests, cut replies short
)

// proxyBufSize is the size in bytes of one read, so the largest chunk the
// proxy forwards at once.
const proxyBufSize = 32 << 10

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	p      *Proxy
	client *net.TCPConn
	server net.Conn // nil when the target could not be reached in BlackHole mode
	once   sync.Once

	// delay, when positive, holds each request chunk that long (Delay);
	// held are the chunks on their way, forwarded in order by one
	// goroutine, and drained is closed when it has forwarded the last
	// chunk of a client that ended.
	delay   atomic.Int64
	mu      sync.Mutex
	held    []heldChunk
	ended   bool // the client side ended: close once held is empty
	running bool // the forwarding goroutine runs
	// gone is closed by end: the forwarder drops what it holds.
	gone chan struct{}
	// replies holds the reply chunks DelayReplies delays.
	replies replyQueue
}

// heldChunk is a request chunk Delay holds until due.
type heldChunk struct {
	b   []byte
	due time.Time
}

// StartProxy starts a proxy on a free 127.0.0.1 port that forwards every
// connection to target (host:port), in Pass mode. tb.Cleanup stops it:
// the listener and every connection are closed and every goroutine of the
// proxy has ended when the cleanup returns.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("redistest: proxy listen: %v", err)
	}
	p := &Proxy{target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	tb.Cleanup(p.stop)
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is a redis:// URL for database 0 through the proxy.
func (p *Proxy) URL() string { return "redis://" + p.Addr() + "/0" }

// Held returns the number of request chunks Delay holds now.
func (p *Proxy) Held() int {
	p.mu.Lock()
	conns := p.snapshot()
	p.mu.Unlock()
	n := 0
	for _, pc := range conns {
		pc.mu.Lock()
		n += len(pc.held)
		if pc.running {
			n++ // the one being forwarded
		}
		pc.mu.Unlock()
	}
	return n
}

// Conns returns the number of client connections the proxy holds open.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Pass makes the proxy forward bytes both ways, as it does at the start.
func (p *Proxy) Pass() { p.setMode(modePass) }

// BlackHole makes the proxy accept connections and keep them open but
// forward nothing either way: bytes read from a client or from the server
// are dropped, so a client's read waits until its own deadline. A client
// connection stays open even when the server side of it closes.
func (p *Proxy) BlackHole() { p.setMode(modeBlackHole) }

// Reset resets every open client connection with a TCP RST (linger 0,
// then close) before it returns, and makes the proxy reset every new
// connection as soon as it accepts it.
func (p *Proxy) Reset() {
	p.mu.Lock()
	p.mode = modeReset
	conns := p.snapshot()
	p.mu.Unlock()
	for _, pc := range conns {
		pc.end(true)
	}
}

// ResetMidReply makes the proxy forward requests to the server, but when
// a chunk of reply (at most 32 KiB) comes back, send the client only its
// first half (at least 1 byte) and then reset the client connection with a
// TCP RST. Connections opened later behave the same until the mode
// changes.
func (p *Proxy) ResetMidReply() { p.setMode(modeResetMidReply) }

// Delay makes the proxy hold every chunk of request bytes it reads on the
// connections open now for d before it forwards it to the server, in
// order, whatever the client does meanwhile: as a middlebox or a slow
// retransmission would, the client's close or reset does not drop them,
// and the server side of the connection closes only after they went
// (unless the server closed it first: a connection Redis killed delivers
// nothing more). Replies pass at once. Connections opened later are not
// delayed; Delay(0) ends the delay of the open ones (held chunks still go
// when due).
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	conns := p.snapshot()
	p.mu.Unlock()
	for _, pc := range conns {
		pc.delay.Store(int64(d))
	}
}

// DelayNext makes the next connection that carries a request chunk, and
// only it, delay its requests by d from that chunk on, as Delay does.
func (p *Proxy) DelayNext(d time.Duration) { p.delayNext.Store(int64(d)) }

// DelayWhen makes the first connection that carries a request chunk
// containing match delay its requests by d from that chunk on, as Delay
// does; other connections pass.
func (p *Proxy) DelayWhen(d time.Duration, match []byte) {
	p.delayWhen.Store(&delayMatch{d: d, match: append([]byte(nil), match...)})
}

// Throttle limits every connection, open and new, to bytesPerSec in each
// direction (a slow link); 0 lifts the limit.
func (p *Proxy) Throttle(bytesPerSec int) { p.rate.Store(int64(bytesPerSec)) }

// SlowDial makes every connection accepted from now on wait d before the
// proxy connects it to the target (its requests wait with it): a slow
// path for new connections while the open ones stay fast. 0 ends it.
func (p *Proxy) SlowDial(d time.Duration) { p.slowDial.Store(int64(d)) }

// hold queues chunk b to go to the server at due.
func (pc *proxyConn) hold(b []byte, due time.Time) {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	pc.held = append(pc.held, heldChunk{b: append([]byte(nil), b...), due: due})
	if !pc.running {
		pc.running = true
		pc.p.wg.Add(1)
		go pc.forward()
	}
}

// forward writes the held chunks to the server when due, then, if the
// client ended meanwhile, closes the connection.
func (pc *proxyConn) forward() {
	defer pc.p.wg.Done()
	for {
		pc.mu.Lock()
		if len(pc.held) == 0 {
			pc.running = false
			ended := pc.ended
			pc.mu.Unlock()
			if ended {
				pc.end(false)
			}
			return
		}
		c := pc.held[0]
		pc.held = pc.held[1:]
		pc.mu.Unlock()
		t := time.NewTimer(time.Until(c.due))
		select {
		case <-t.C:
		case <-pc.gone: // ended (a reset, the proxy stopping): nothing more goes
			t.Stop()
			return
		}
		if _, err := pc.server.Write(c.b); err != nil {
			pc.end(false)
			return
		}
	}
}

// clientEnded ends pc at once, or after the held chunks when there are
// some.
func (pc *proxyConn) clientEnded() {
	pc.mu.Lock()
	pending := pc.running
	pc.ended = true
	pc.mu.Unlock()
	if !pending {
		pc.end(false)
	}
}

func (p *Proxy) setMode(m proxyMode) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = m
}

func (p *Proxy) currentMode() proxyMode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode
}

// snapshot lists the open connections; p.mu must be held.
func (p *Proxy) snapshot() []*proxyConn {
	out := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		out = append(out, pc)
	}
	return out
}

// stop closes the listener and every connection and waits for every
// goroutine of the proxy to end.
func (p *Proxy) stop() {
	p.mu.Lock()
	p.closed = true
	conns := p.snapshot()
	p.mu.Unlock()
	_ = p.ln.Close()
	for _, pc := range conns {
		pc.end(false)
	}
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // a transient failure such as too many open files
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.accepted.Add(1)
		p.wg.Add(1) // the counter is above zero: this goroutine holds one
		go p.serve(c.(*net.TCPConn))
	}
}

// serve connects client to the target and forwards between them.
func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	var server net.Conn // stays nil when the dial fails
	if d := time.Duration(p.slowDial.Load()); d > 0 {
		time.Sleep(d)
	}
	if p.currentMode() != modeReset {
		server, _ = net.DialTimeout("tcp", p.target, time.Second)
	}
	pc := &proxyConn{p: p, client: client, server: server, gone: make(chan struct{})}
	p.mu.Lock()
	if p.closed || p.mode == modeReset || (server == nil && p.mode != modeBlackHole) {
		p.mu.Unlock()
		pc.end(true) // a target that refuses looks like a reset too
		return
	}
	p.conns[pc] = struct{}{}
	p.mu.Unlock()
	if server != nil {
		p.wg.Add(1)
		go func() { defer p.wg.Done(); pc.pump(pc.server, pc.client, true) }()
	}
	pc.pump(pc.client, pc.server, false)
}

// pump carries bytes from src to dst: requests from the client to the
// server, or (toClient) replies from the server to the client, which
// ResetMidReply cuts in half. In BlackHole mode bytes are dropped, and a
// server that ends keeps the client open: the client side ends it if the
// mode changes and a request finds the server gone (or never reached).
func (pc *proxyConn) pump(src, dst net.Conn, toClient bool) {
	buf := make([]byte, proxyBufSize)
	var paced int64 // bytes carried since paceStart under the current rate
	var paceStart time.Time
	var paceRate int64
	for {
		n, err := src.Read(buf)
		if rate := pc.p.rate.Load(); n > 0 && rate > 0 {
			// The link's pace: the bytes carried since the link got busy
			// take bytes/rate seconds (an idle link starts afresh).
			now := time.Now()
			if rate != paceRate || now.Sub(paceStart) > time.Duration(paced*int64(time.Second)/rate)+10*time.Millisecond {
				paced, paceStart, paceRate = 0, now, rate
			}
			paced += int64(n)
			time.Sleep(time.Until(paceStart.Add(time.Duration(paced * int64(time.Second) / rate))))
		}
		if n > 0 && !toClient && pc.delay.Load() == 0 {
			if d := pc.p.delayNext.Swap(0); d > 0 {
				pc.delay.Store(d)
			}
			if dm := pc.p.delayWhen.Load(); dm != nil && bytes.Contains(buf[:n], dm.match) &&
				pc.p.delayWhen.CompareAndSwap(dm, nil) {
				pc.delay.Store(int64(dm.d))
			}
		}
		if n > 0 {
			switch mode := pc.p.currentMode(); {
			case mode == modeBlackHole: // dropped
			case mode == modeReset:
				pc.end(true)
				return
			case mode == modeResetMidReply && toClient:
				_, _ = dst.Write(buf[:max(1, n/2)])
				pc.end(true)
				return
			case dst == nil: // the target was never reached
				pc.end(true)
				return
			case !toClient && (pc.delay.Load() > 0 || pc.holding()):
				pc.hold(buf[:n], time.Now().Add(time.Duration(pc.delay.Load())))
			case toClient && pc.replies.delaying():
				pc.holdReply(buf[:n])
			case !toClient && pc.answer(buf[:n]):
			default:
				if _, err := dst.Write(buf[:n]); err != nil {
					pc.end(false)
					return
				}
			}
		}
		if err != nil {
			if toClient && pc.p.currentMode() == modeBlackHole {
				_ = pc.server.Close()
				return
			}
			if !toClient {
				pc.clientEnded()
				return
			}
			pc.end(false)
			return
		}
	}
}

// answer writes the proxy's own reply to the request chunk b (Answer) to
// the client, and reports whether there was one.
func (pc *proxyConn) answer(b []byte) bool {
	reply := pc.p.answerFor(b)
	if reply == nil {
		return false
	}
	_, _ = pc.client.Write(reply)
	return true
}

// holding reports whether chunks are held: a later chunk queues behind
// them even after the delay ended, so the order holds.
func (pc *proxyConn) holding() bool {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	return pc.running
}

// end closes both sides of pc, with a TCP RST to the client when rst is
// set, and forgets it. Only the first call has an effect.
func (pc *proxyConn) end(rst bool) {
	pc.once.Do(func() {
		close(pc.gone)
		if rst {
			_ = pc.client.SetLinger(0)
		}
		_ = pc.client.Close()
		if pc.server != nil {
			_ = pc.server.Close()
		}
		pc.p.mu.Lock()
		delete(pc.p.conns, pc)
		pc.p.mu.Unlock()
	})
}
