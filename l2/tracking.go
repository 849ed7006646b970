package l2

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/internal/ctxwait"
)

// InvalidationChannel is where Redis delivers the invalidation messages of
// server-assisted client-side caching (CLIENT TRACKING).
const InvalidationChannel = "__redis__:invalidate"

// Tracking timing. A listener sends a PING after trackPingEvery without a
// message and declares its connection lost when nothing at all has arrived
// for trackDeadline, so a connection that hangs (SIGSTOP, a black hole) is
// noticed within trackDeadline plus one receive timeout. Cluster and ring
// topologies are re-read every trackRefresh.
const (
	trackPingEvery = 250 * time.Millisecond
	trackDeadline  = time.Second
	trackRefresh   = time.Second
	trackBackoff   = 50 * time.Millisecond
	trackMaxBack   = time.Second
	// trackRefusedRetry spaces the attempts after a refusal (ErrRefused):
	// the answer changes only when an operator changes the server, and
	// each refused command may land in the server's ACL LOG.
	trackRefusedRetry = 30 * time.Second
)

// errSilent ends a tracking session whose connection stopped answering.
var errSilent = errors.New("l2: tracking connection silent")

// TrackingHandler receives what a Tracker hears. Its functions are called
// one at a time.
type TrackingHandler struct {
	// Invalidate receives full Redis keys that some client (this one
	// included) wrote, deleted, or that expired or were evicted. A nil
	// slice means every key (FLUSHDB, FLUSHALL, or a message the Tracker
	// could not read).
	Invalidate func(keys []string)
	// Down is called when the Tracker can no longer vouch that it hears
	// every write: a node's connection was lost or a node is not tracked
	// yet. err says why.
	Down func(err error)
	// Up is called when every node is tracked again (and the first time).
	// Writes made while the Tracker was down were not reported.
	Up func()
	// Refused is called when a node refuses the Tracker's commands (err
	// matches ErrRefused), once until the Tracker is up again; it is
	// retried every 30 s meanwhile. Down is not called for a refusal.
	Refused func(err error)
}

// Tracker keeps one connection per Redis node (every master of a cluster,
// every shard of a ring) in broadcasting CLIENT TRACKING mode for one key
// prefix, and reports every write to a key under that prefix. Stop it with
// Close.
type Tracker struct {
	prefix string
	// channel is what each listener subscribes to; keysOf, set by
	// Subscribe, reads a message's keys there (nil: Redis's own
	// invalidation messages, tracking on).
	channel string
	keysOf  func(payload string) (keys []string, ok bool)
	h       TrackingHandler
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	ready   chan struct{}
	// settled is closed on the first news of any kind: every node tracked,
	// or a node (or the topology) could not be reached.
	settled  chan struct{}
	settleOn sync.Once

	// discover returns the options of every node to track.
	discover func(ctx context.Context) ([]*redis.Options, error)
	static   bool // discover always returns the same single node

	mu      sync.Mutex // serializes handler calls and guards what follows
	nodes   map[string]*nodeListener
	up      bool
	refused bool // a node refused since the Tracker was last up
	readyOn sync.Once
}

// Track starts tracking every key that starts with prefix ("" tracks every
// key) and returns at once; Ready is closed when tracking is first in
// place. The Tracker opens connections of its own, with the settings of
// the Store's client, and never uses the Store's connection pool.
func (s *Store) Track(prefix string, h TrackingHandler) (*Tracker, error) {
	return s.listen(&Tracker{prefix: prefix, channel: InvalidationChannel, h: h})
}

// listen starts t's supervisor over the nodes of the Store's client.
func (s *Store) listen(t *Tracker) (*Tracker, error) {
	if err := s.check("track"); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.ready, t.settled, t.nodes = cancel, make(chan struct{}), make(chan struct{}), map[string]*nodeListener{}
	switch rdb := s.rdb.(type) {
	case *redis.Client:
		if rdb.Options().Addr == failoverAddr {
			t.discover = func(ctx context.Context) ([]*redis.Options, error) { return sentinelMaster(ctx, rdb.Options()) }
			break
		}
		t.static = true
		t.discover = func(context.Context) ([]*redis.Options, error) { return []*redis.Options{rdb.Options()}, nil }
	case *redis.ClusterClient:
		t.discover = func(ctx context.Context) ([]*redis.Options, error) { return clusterMasters(ctx, rdb, t.keysOf != nil) }
	case *redis.Ring:
		t.discover = func(ctx context.Context) ([]*redis.Options, error) { return ringShards(ctx, rdb) }
	default:
		cancel()
		return nil, &BackendError{Op: "track", Err: errors.New("client type does not support tracking")}
	}
	t.wg.Add(1)
	go t.supervise(ctx)
	return t, nil
}

// Ready is closed once every node is tracked for the first time.
func (t *Tracker) Ready() <-chan struct{} { return t.ready }

// Settled is closed once the Tracker first knows how things stand: every
// node is tracked (Ready is closed too), or a node or the topology could
// not be reached (tracking goes on trying in the background). A Redis that
// neither answers nor refuses leaves it open.
func (t *Tracker) Settled() <-chan struct{} { return t.settled }

func (t *Tracker) settle() { t.settleOn.Do(func() { close(t.settled) }) }

// Stop ends the Tracker's work without waiting for its goroutines (Close
// waits for them): its handlers may still be running when it returns.
func (t *Tracker) Stop() { t.cancel() }

// Close stops every listener and waits for their goroutines. It is
// idempotent and returns nil.
func (t *Tracker) Close() error {
	t.cancel()
	t.wg.Wait()
	return nil
}

// supervise keeps one listener per discovered node until ctx ends.
func (t *Tracker) supervise(ctx context.Context) {
	defer t.wg.Done()
	defer t.stopAll()
	tick := time.NewTicker(trackRefresh)
	defer tick.Stop()
	for {
		t.refresh(ctx)
		if t.static {
			<-ctx.Done()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// refresh starts listeners for new nodes and stops those of nodes that left.
func (t *Tracker) refresh(ctx context.Context) {
	dctx, cancel := context.WithTimeout(ctx, trackRefresh)
	opts, err := t.discover(dctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			t.mu.Lock()
			t.setUp(false, fail("track", err))
			t.mu.Unlock()
			t.settle()
		}
		return
	}
	want := make(map[string]*redis.Options, len(opts))
	for _, o := range opts {
		want[o.Addr] = o
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, n := range t.nodes {
		if _, ok := want[addr]; !ok {
			n.stop()
			delete(t.nodes, addr)
		}
	}
	for addr, o := range want {
		if _, ok := t.nodes[addr]; !ok {
			nctx, cancel := context.WithCancel(ctx)
			n := &nodeListener{t: t, addr: addr, rdb: redis.NewClient(listenerOptions(o, t.prefix, t.keysOf == nil)), cancel: cancel}
			t.nodes[addr] = n
			t.wg.Add(1)
			go n.run(nctx)
		}
	}
	t.evaluate(errors.New("l2: tracking: node not tracked yet"))
}

// stopAll stops every listener (the Tracker is closing).
func (t *Tracker) stopAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for addr, n := range t.nodes {
		n.stop()
		delete(t.nodes, addr)
	}
}

// evaluate recomputes whether every node is tracked. The caller holds mu.
func (t *Tracker) evaluate(why error) {
	all := len(t.nodes) > 0
	for _, n := range t.nodes {
		all = all && n.up
	}
	t.setUp(all, why)
}

// setUp records the aggregate state and reports a change. The caller holds mu.
func (t *Tracker) setUp(up bool, why error) {
	if up == t.up {
		return
	}
	t.up = up
	if up {
		t.refused = false
	}
	if !up {
		if t.h.Down != nil {
			t.h.Down(why)
		}
		return
	}
	if t.h.Up != nil {
		t.h.Up()
	}
	t.readyOn.Do(func() { close(t.ready) })
	t.settle()
}

// nodeState is called by a listener when its connection is confirmed (up)
// or lost.
func (t *Tracker) nodeState(n *nodeListener, up bool, why error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nodes[n.addr] != n {
		return // stopped meanwhile
	}
	n.up = up
	if !up && IsRefusal(why) {
		t.setUp(false, why)
		if !t.refused && t.h.Refused != nil {
			t.h.Refused(why)
		}
		t.refused = true
		t.settle()
		return
	}
	if !up {
		t.setUp(false, why)
		t.settle()
		return
	}
	t.evaluate(why)
}

// invalidate delivers keys under mu, so handler calls never overlap.
func (t *Tracker) invalidate(keys []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h.Invalidate != nil {
		t.h.Invalidate(keys)
	}
}

// nodeListener is one node's tracking connection: a dedicated go-redis
// client whose every new connection turns tracking on, redirected to
// itself, before it subscribes to InvalidationChannel.
type nodeListener struct {
	t      *Tracker
	addr   string
	rdb    *redis.Client
	cancel context.CancelFunc
	up     bool // guarded by t.mu
}

// listenerOptions copies the node's settings (address, dialer, TLS,
// credentials, database) and makes them fit one long-lived RESP2
// subscription that enables broadcasting tracking on connect when track is
// set.
func listenerOptions(base *redis.Options, prefix string, track bool) *redis.Options {
	o := &redis.Options{
		Network:                    base.Network,
		Addr:                       base.Addr,
		Dialer:                     base.Dialer,
		Username:                   base.Username,
		Password:                   base.Password,
		CredentialsProvider:        base.CredentialsProvider,
		CredentialsProviderContext: base.CredentialsProviderContext,
		DB:                         base.DB,
		TLSConfig:                  base.TLSConfig,
		ClientName:                 base.ClientName,
		Protocol:                   2,
		MaxRetries:                 -1,
		DialerRetries:              1,
		DialTimeout:                trackDeadline,
		WriteTimeout:               trackDeadline,
		ReadTimeout:                trackDeadline,
		PoolSize:                   1,
		DisableIdentity:            true,
	}
	userInit := base.OnConnect
	if !track {
		o.OnConnect = userInit
		return o
	}
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if userInit != nil {
			if err := userInit(ctx, cn); err != nil {
				return err
			}
		}
		id, err := cn.ClientID(ctx).Result()
		if err != nil {
			return classify(err)
		}
		args := []any{"client", "tracking", "on", "redirect", id, "bcast"}
		if prefix != "" {
			args = append(args, "prefix", prefix)
		}
		return classify(cn.Do(ctx, args...).Err())
	}
	return o
}

// stop ends the listener; its goroutine exits soon after.
func (n *nodeListener) stop() { n.cancel() }

// run keeps the node's subscription up until ctx ends (Close, or stop).
func (n *nodeListener) run(ctx context.Context) {
	defer n.t.wg.Done()
	defer n.cancel()
	defer func() { _ = n.rdb.Close() }()
	backoff := trackBackoff
	for ctx.Err() == nil {
		err := n.session(ctx, &backoff)
		if ctx.Err() != nil {
			return
		}
		err = fail("track", classify(err))
		n.t.nodeState(n, false, err)
		wait := backoff
		if IsRefusal(err) {
			wait = trackRefusedRetry
		}
		if !ctxwait.Sleep(ctx, wait) {
			return
		}
		backoff = min(backoff*2, trackMaxBack)
	}
}

// session runs one subscription until its connection fails or goes quiet
// for trackDeadline; it returns why it ended.
func (n *nodeListener) session(ctx context.Context, backoff *time.Duration) error {
	ps := n.rdb.Subscribe(ctx, n.t.channel)
	defer func() { _ = ps.Close() }()
	// Closing the subscription interrupts a blocked receive at once.
	defer context.AfterFunc(ctx, func() { _ = ps.Close() })()
	heard := time.Now()
	for {
		msg, err := ps.ReceiveTimeout(ctx, trackPingEvery)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				if time.Since(heard) > trackDeadline {
					return errSilent
				}
				if perr := ps.Ping(ctx); perr != nil {
					return perr
				}
				continue
			}
			if strings.Contains(err.Error(), "unsupported pubsub message") {
				// A message go-redis cannot represent (FLUSHALL's nil
				// key list is one): the only safe reading is "every key".
				heard = time.Now()
				n.t.invalidate(nil)
				continue
			}
			return err
		}
		heard = time.Now()
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				*backoff = trackBackoff
				n.t.nodeState(n, true, nil)
			}
		case *redis.Message:
			if m.Channel != n.t.channel {
				continue
			}
			if n.t.keysOf != nil {
				if keys, ok := n.t.keysOf(m.Payload); ok {
					n.t.invalidate(keys)
				}
				continue
			}
			if m.PayloadSlice != nil {
				n.t.invalidate(m.PayloadSlice)
			} else {
				n.t.invalidate(nil) // a payload that is not a key list
			}
		}
	}
}
