package fence

// The connections a gate watches: the ID read at the handshake, the wait
// before each write, the first failure that starts a fence.

import (
	"bytes"
	"crypto/tls"
	"net"
	"sync/atomic"
	"syscall"
	"time"
)

// fconn is a connection a gate watches.
type fconn struct {
	net.Conn
	g    *gate
	h    *fenceHook
	born time.Time
	// local is the connection's local address, as a direct path shows it
	// in CLIENT LIST.
	local string
	// id is the Redis client ID read from the handshake (0: not known).
	id atomic.Int64
	// hello holds the first reply's bytes until the ID is found; helloDone
	// ends the search. Only the reading goroutine touches them.
	hello     []byte
	helloDone bool
	// greeted is set once the first reply (HELLO's) was read whole: until
	// then go-redis has sent nothing but its handshake, which a fence need
	// not order.
	greeted atomic.Bool
	// pubsub marks a subscribed connection: never fenced.
	pubsub atomic.Bool
	// failed is set by the first failure: the connection is fenced once
	// and closed with a reset.
	failed atomic.Bool
	// wdl is the write deadline (UnixNano, 0: none).
	wdl atomic.Int64
	// closed is set by the first Close.
	closed atomic.Bool
}

// Read implements net.Conn.
func (c *fconn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if !c.helloDone && n > 0 {
		c.readHello(b[:n])
	}
	if err != nil {
		c.fail()
	}
	return n, err
}

// readHello looks for the client ID in the first reply.
func (c *fconn) readHello(b []byte) {
	buf := b
	if c.hello != nil {
		c.hello = append(c.hello, b...)
		buf = c.hello
	}
	id, more := helloID(buf)
	switch {
	case id > 0:
		c.id.Store(id)
	case more && len(buf) < maxHello:
		if c.hello == nil {
			c.hello = append([]byte(nil), b...)
		}
		return
	}
	c.helloDone, c.hello = true, nil
	c.greeted.Store(true)
}

// Write implements net.Conn: it waits while a fence of the server runs.
func (c *fconn) Write(b []byte) (int, error) {
	if c.g.pending.Load() != 0 && !c.g.f.closed.Load() {
		var dl time.Time
		if ns := c.wdl.Load(); ns != 0 {
			dl = time.Unix(0, ns)
		}
		if err := c.g.wait(dl); err != nil {
			return 0, &net.OpError{Op: "write", Net: c.g.network, Err: err}
		}
	}
	if !c.pubsub.Load() && subscribes(commandName(b)) {
		c.pubsub.Store(true)
	}
	n, err := c.Conn.Write(b)
	if err != nil {
		c.fail()
	}
	return n, err
}

// fail fences the connection at its first failure, unless it is a
// subscribed one or failed during its handshake (go-redis waits for
// HELLO's reply before it sends anything else).
func (c *fconn) fail() {
	if !c.failed.CompareAndSwap(false, true) || c.pubsub.Load() || !c.greeted.Load() {
		return
	}
	c.g.fence(c)
}

// Close implements net.Conn: a failed connection is reset, so that the
// kernel drops what it has not sent.
func (c *fconn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.h.alive.Add(-1)
	}
	if c.failed.Load() {
		resetOnClose(c.Conn)
	}
	return c.Conn.Close()
}

// resetOnClose sets linger 0 on conn's TCP connection (under TLS too).
func resetOnClose(conn net.Conn) {
	for range 4 {
		switch t := conn.(type) {
		case *net.TCPConn:
			_ = t.SetLinger(0)
			return
		case *tls.Conn:
			conn = t.NetConn()
		default:
			return
		}
	}
}

// SetDeadline implements net.Conn.
func (c *fconn) SetDeadline(t time.Time) error {
	c.noteWriteDeadline(t)
	return c.Conn.SetDeadline(t)
}

// SetWriteDeadline implements net.Conn.
func (c *fconn) SetWriteDeadline(t time.Time) error {
	c.noteWriteDeadline(t)
	return c.Conn.SetWriteDeadline(t)
}

func (c *fconn) noteWriteDeadline(t time.Time) {
	if t.IsZero() {
		c.wdl.Store(0)
	} else {
		c.wdl.Store(t.UnixNano())
	}
}

// fsysconn is an fconn whose connection has a file descriptor.
type fsysconn struct {
	*fconn
	sc syscall.Conn
}

// SyscallConn implements syscall.Conn.
func (c *fsysconn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// subscribes reports whether name is SUBSCRIBE, PSUBSCRIBE or SSUBSCRIBE,
// in any case, without allocating.
func subscribes(name []byte) bool {
	if n := len(name); n == 10 && (name[0]|0x20 == 'p' || name[0]|0x20 == 's') {
		name = name[1:]
	} else if n != 9 {
		return false
	}
	return bytes.EqualFold(name, []byte("subscribe"))
}
