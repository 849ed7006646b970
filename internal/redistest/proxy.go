package redistest

import (
	"errors"
	"net"
	"sync"
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

	mu     sync.Mutex
	mode   proxyMode
	conns  map[*proxyConn]struct{}
	closed bool
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
		p.wg.Add(1) // the counter is above zero: this goroutine holds one
		go p.serve(c.(*net.TCPConn))
	}
}

// serve connects client to the target and forwards between them.
func (p *Proxy) serve(client *net.TCPConn) {
	defer p.wg.Done()
	var server net.Conn // stays nil when the dial fails
	if p.currentMode() != modeReset {
		server, _ = net.DialTimeout("tcp", p.target, time.Second)
	}
	pc := &proxyConn{p: p, client: client, server: server}
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
	for {
		n, err := src.Read(buf)
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
			pc.end(false)
			return
		}
	}
}

// end closes both sides of pc, with a TCP RST to the client when rst is
// set, and forgets it. Only the first call has an effect.
func (pc *proxyConn) end(rst bool) {
	pc.once.Do(func() {
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
