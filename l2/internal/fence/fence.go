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
//   - A kill is retried until Redis runs it, finds the connection gone or
//     refuses it (then the Fencer is off: Stats().On false), or Close;
//     the tries back off from 10 ms to 500 ms apart, come 10 ms apart
//     while a write waits, and at once when a write comes to wait (a
//     server back from a restart lets it go then).
//   - Close ends every wait and every kill, and closes the killers.
package fence

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Stats counts a Fencer's fences; l2.FenceStats documents each field.
type Stats struct {
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

// killTimeout bounds one try of a fence; fenceBackoff and fenceMaxBackoff
// space the tries while the server does not answer.
const (
	killTimeout     = time.Second
	fenceBackoff    = 10 * time.Millisecond
	fenceMaxBackoff = 500 * time.Millisecond
)

// Fencer fences the failed connections of the go-redis clients it hooks
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
	gates map[string]*gate // by the server's network address

	fenced, unfenced, held atomic.Uint64
	// broken is set once a connection could not be fenced: a write's
	// unknown outcome then must not be retried (FenceStats.On).
	broken atomic.Bool
}

// New returns a Fencer. refused hears each failed connection that cannot
// be fenced (at most once per server and reason; it may be nil), and
// refusal tells a reply that refuses CLIENT KILL (NOPERM, a removed
// command) from one worth trying again.
func New(refused func(error), refusal func(error) bool) *Fencer {
	f := &Fencer{refused: refused, refusal: refusal, gates: map[string]*gate{}}
	f.bg, f.stop = context.WithCancel(context.Background())
	return f
}

// Hook returns the hook to add to node, one go-redis client (a cluster's
// or ring's node, or the standalone client itself): its options are what
// a killer needs to log in to the same servers.
func (f *Fencer) Hook(node *redis.Client) redis.Hook { return f.hookFor(node) }

// Stats returns the Fencer's counters.
func (f *Fencer) Stats() Stats {
	return Stats{On: !f.broken.Load(), Fenced: f.fenced.Load(), Unfenced: f.unfenced.Load(), Held: f.held.Load()}
}

// Close stops the Fencer: held writes go, kills in progress end, killers
// close. It is idempotent.
func (f *Fencer) Close() { f.close() }

// Held reports whether err is a write a fence held past its deadline:
// nothing of it was sent.
func Held(err error) bool { return errors.Is(err, errFenceWait) }

// close stops the Fencer: held writes go, kills in progress end, killers
// close.
func (f *Fencer) close() {
	if f == nil || !f.closed.CompareAndSwap(false, true) {
		return
	}
	f.stop()
	f.mu.Lock()
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

// hookFor is the hook of node, one go-redis client: its options are what a
// killer needs to log in to the same servers.
func (f *Fencer) hookFor(node *redis.Client) redis.Hook {
	return fenceHook{f: f, opts: node.Options()}
}

// fenceHook wraps every connection its client dials.
type fenceHook struct {
	f    *Fencer
	opts *redis.Options
}

// DialHook implements redis.Hook.
func (h fenceHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil || conn == nil || h.f.closed.Load() {
			return conn, err
		}
		return h.f.wrap(conn, h.opts), nil
	}
}

// ProcessHook implements redis.Hook.
func (fenceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (fenceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// wrap returns conn watched by the gate of its server.
func (f *Fencer) wrap(conn net.Conn, opts *redis.Options) net.Conn {
	ra := conn.RemoteAddr()
	key := ra.Network() + "/" + ra.String()
	f.mu.Lock()
	g := f.gates[key]
	if g == nil {
		g = &gate{f: f, network: ra.Network(), addr: ra.String(), opts: opts, retry: make(chan struct{}, 1)}
		f.gates[key] = g
	}
	f.mu.Unlock()
	fc := &fconn{Conn: conn, g: g, born: time.Now(), local: conn.LocalAddr().String()}
	if sc, ok := conn.(syscall.Conn); ok {
		// go-redis health-checks an idle connection through its file
		// descriptor, when it can reach one.
		return &fsysconn{fconn: fc, sc: sc}
	}
	return fc
}

// gate holds the writes to one server while a failed connection to it is
// being fenced.
type gate struct {
	f             *Fencer
	network, addr string
	opts          *redis.Options

	pending atomic.Int32 // failed connections not yet fenced
	mu      sync.Mutex
	clear   chan struct{} // closed when pending drops to 0; under mu
	// refusedKill is set once the server refused CLIENT KILL: later
	// failures are not tried.
	refusedKill atomic.Bool
	// told remembers the reasons already reported to refused; under mu.
	told map[string]bool
	// waiting counts the writes waiting now; while there are any, a kill
	// is tried again fenceBackoff after the last try (a server back from
	// a restart lets them go at the next try). retry wakes a kill waiting
	// out a longer backoff when a write comes to wait.
	waiting atomic.Int32
	retry   chan struct{}
}

// errNoID is why a connection without a client ID is not fenced.
var errNoID = errors.New("l2: no client ID was read at the connection's handshake")

// errFenceWait is the error of a write that could not leave before its
// deadline because a fence was still running: nothing of it was sent. It
// is a timeout, as a write deadline is (it wraps os.ErrDeadlineExceeded),
// which go-redis and IsTransient treat as one.
var errFenceWait = fmt.Errorf("l2: write held: a failed connection to the server is being fenced: %w", os.ErrDeadlineExceeded)

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
	case g.retry <- struct{}{}:
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
	g.mu.Unlock()
}

// fence starts fencing c, which failed: writes wait from now on.
func (g *gate) fence(c *fconn) {
	f := g.f
	if f.closed.Load() {
		return
	}
	id := c.id.Load()
	switch {
	case id <= 0:
		g.unfenced(errNoID)
		return
	case g.refusedKill.Load():
		g.unfenced(nil)
		return
	}
	g.mu.Lock()
	if g.pending.Add(1) == 1 {
		g.clear = make(chan struct{})
	}
	g.mu.Unlock()
	f.wg.Add(1)
	go g.kill(c, id)
}

// done ends one fence: the last one lets the writes go.
func (g *gate) done() {
	g.mu.Lock()
	if g.pending.Add(-1) == 0 && g.clear != nil {
		close(g.clear)
		g.clear = nil
	}
	g.mu.Unlock()
}

// unfenced counts a failed connection that is not fenced and reports why
// (nil: reported already).
func (g *gate) unfenced(why error) {
	g.f.unfenced.Add(1)
	g.f.broken.Store(true)
	if why == nil || g.f.refused == nil {
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

// kill fences c (client id) and retries while the server does not answer;
// it ends when Redis ran the kill, found c gone, refused the kill, or the
// Fencer closed.
func (g *gate) kill(c *fconn, id int64) {
	defer g.f.wg.Done()
	defer g.done()
	backoff := fenceBackoff
	for {
		// Each try dials afresh: a go-redis pool that failed to dial as
		// many times as it has connections answers its last dial error,
		// without dialing, for up to a second, and the server may be back
		// well before that.
		k := g.killer()
		ctx, cancel := context.WithTimeout(g.f.bg, killTimeout)
		err := g.tryKill(ctx, k, c, id)
		cancel()
		_ = k.Close()
		switch {
		case err == nil:
			g.f.fenced.Add(1)
			return
		case g.f.refusal(err):
			g.refusedKill.Store(true)
			g.unfenced(err)
			return
		case g.f.bg.Err() != nil:
			return
		}
		if g.waiting.Load() > 0 {
			backoff = fenceBackoff
		}
		if !g.backoff(backoff) {
			return
		}
		backoff = min(2*backoff, fenceMaxBackoff)
	}
}

// backoff waits d before the next try of a kill, or less when a write
// comes to wait on the gate; false when the Fencer closed.
func (g *gate) backoff(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-g.retry:
		return true
	case <-g.f.bg.Done():
		return false
	}
}

// tryKill asks the server whether connection id is still c and kills it;
// nil when c is dead now. The killer k was dialed after c failed.
//
// A server that restarted since c was made gives its IDs anew, and id may
// now name another connection (this Store's next one, held at the gate):
// that one must not be killed. k's own entry (CLIENT INFO) tells: an ID
// below c's is a restart (on one server, IDs only grow); an address equal
// to k's local one is a direct path, where the kill is filtered by c's
// own address too (CLIENT KILL ID id ADDR addr), so it reaches c or
// nothing. Behind a proxy or NAT, or where CLIENT INFO is refused, id is
// killed unless CLIENT LIST shows a connection younger than c.
func (g *gate) tryKill(ctx context.Context, k *killer, c *fconn, id int64) error {
	sid := strconv.FormatInt(id, 10)
	self, err := k.Do(ctx, "client", "info").Text()
	switch {
	case err == nil:
		if own, ok := clientField(self, "id"); ok {
			if n, perr := strconv.ParseInt(own, 10, 64); perr == nil && n < id {
				return nil // restarted: c died with the server
			}
		}
		if addr, ok := clientField(self, "addr"); ok && c.local != "" && addr == k.local() {
			return k.Do(ctx, "client", "kill", "id", sid, "addr", c.local).Err()
		}
	case !g.f.refusal(err):
		return err
	}
	info, err := k.Do(ctx, "client", "list", "id", sid).Text()
	switch {
	case err == nil && strings.TrimSpace(info) == "":
		return nil // gone already
	case err == nil:
		if age, ok := clientField(info, "age"); ok {
			if n, perr := strconv.ParseInt(age, 10, 64); perr == nil && n+2 < int64(time.Since(c.born)/time.Second) {
				return nil // a younger connection: the server restarted since c was made
			}
		}
	case g.f.refusal(err):
		// CLIENT LIST refused; CLIENT KILL may be allowed.
	default:
		return err
	}
	return k.Do(ctx, "client", "kill", "id", sid).Err()
}

// clientField reads one name=value field of a CLIENT LIST or CLIENT INFO
// line.
func clientField(info, name string) (string, bool) {
	for f := range strings.FieldsSeq(info) {
		if v, ok := strings.CutPrefix(f, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// killer is a connection of a gate's own to its server, for one fence: a
// client without the fence's hook (its writes never wait on the gate),
// logged in as the node's client is, dialing the server's exact address.
type killer struct {
	*redis.Client
	addr atomic.Pointer[string] // its connection's local address
}

// local returns the killer connection's local address ("" before it is
// dialed).
func (k *killer) local() string {
	if a := k.addr.Load(); a != nil {
		return *a
	}
	return ""
}

// DialHook implements redis.Hook: it notes the local address.
func (k *killer) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err == nil && conn != nil {
			a := conn.LocalAddr().String()
			k.addr.Store(&a)
		}
		return conn, err
	}
}

// ProcessHook implements redis.Hook.
func (*killer) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook.
func (*killer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// killer dials a killer for one fence.
func (g *gate) killer() *killer {
	o := g.opts
	ko := &redis.Options{
		Network: g.network, Addr: g.addr,
		Username: o.Username, Password: o.Password,
		CredentialsProvider: o.CredentialsProvider, CredentialsProviderContext: o.CredentialsProviderContext,
		StreamingCredentialsProvider: o.StreamingCredentialsProvider,
		AuthEmptyPassword:            o.AuthEmptyPassword,
		DialTimeout:                  killTimeout, ReadTimeout: killTimeout, WriteTimeout: killTimeout,
		PoolSize: 1, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
	if o.TLSConfig != nil {
		ko.TLSConfig = o.TLSConfig.Clone()
	}
	k := &killer{Client: redis.NewClient(ko)}
	k.AddHook(k)
	return k
}

// fconn is a connection a gate watches.
type fconn struct {
	net.Conn
	g    *gate
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
