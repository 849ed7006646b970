package l2

// The auto-pipelined stream of a cluster: one stream per master (a
// batcher, batcher.go) over the master's own *redis.Client (the node
// client go-redis's ClusterClient keeps), so a batch carries one master's
// commands only and a master that does not answer holds its own commands,
// never another master's. A command goes to the stream of the master the
// cluster client's slot map names for its key; a master that answers MOVED
// or ASK (its slot moved, or is moving) has not run it, and its caller
// sends it again directly to the master the reply names (ASKING and the
// command on one connection for ASK), after that master's stream ran the
// commands whose callers stopped waiting.

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// nodeStreams are a cluster client's per-master streams, made on a
// master's first command.
type nodeStreams struct {
	cluster *redis.ClusterClient
	// ioTimeout, when positive, is each stream's read and write timeout
	// (a WithTimeout clone of the node client); 0 keeps the node's.
	ioTimeout time.Duration
	// maxCmds and maxBytes bound a batch: the cluster client's
	// AutoPipelineOptions' MaxBatchSize and MaxBatchBytes, or go-redis's
	// defaults.
	maxCmds, maxBytes int
	// m maps a node client to its stream; copied on write under mu.
	m  atomic.Pointer[map[*redis.Client]*stream]
	mu sync.Mutex
	// known maps an address to the node client the cluster client made
	// for it (string -> *redis.Client), to follow a redirect to a master
	// no command was routed to yet.
	known sync.Map
}

// newNodeStreams checks that the cluster client's pipeliner options keep
// each stream ordered and returns the (empty) set of streams.
func newNodeStreams(c *redis.ClusterClient, ioTimeout time.Duration) (*nodeStreams, error) {
	cfg := c.Options().AutoPipelineOptions
	max := redis.DefaultAutoPipelineOptions().MaxBatchBytes
	maxCmds := redis.DefaultAutoPipelineOptions().MaxBatchSize
	if cfg != nil {
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		if cfg.Unordered || cfg.MaxConcurrentBatches > 1 || cfg.FullDuplex {
			return nil, ErrStreamRefused
		}
		if cfg.MaxBatchBytes > 0 {
			max = cfg.MaxBatchBytes
		}
		if cfg.MaxBatchSize > 0 {
			maxCmds = cfg.MaxBatchSize
		}
	}
	ns := &nodeStreams{cluster: c, ioTimeout: ioTimeout, maxCmds: maxCmds, maxBytes: max}
	ns.m.Store(&map[*redis.Client]*stream{})
	// The nodes it makes from now on, then those it has (bounded, as
	// Fence reads them).
	know := func(n *redis.Client) { ns.known.Store(n.Options().Addr, n) }
	c.OnNewNode(know)
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_ = c.ForEachShard(ctx, func(_ context.Context, n *redis.Client) error { know(n); return nil })
	cancel()
	return ns, nil
}

// streamFor returns the stream of the master that serves key now (as the
// cluster client's slot map says).
func (ns *nodeStreams) streamFor(ctx context.Context, key string) (*stream, error) {
	node, err := ns.cluster.MasterForKey(ctx, key)
	if err != nil {
		return nil, err
	}
	if st := (*ns.m.Load())[node]; st != nil {
		return st, nil
	}
	return ns.add(node)
}

// add makes node's stream (once), and drops the streams of node clients
// the cluster client has replaced (go-redis closes a node client some time
// after its node left the slot map; a new client of that address is a new
// node).
func (ns *nodeStreams) add(node *redis.Client) (*stream, error) {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	old := *ns.m.Load()
	if st := old[node]; st != nil {
		return st, nil
	}
	src := node
	if ns.ioTimeout > 0 {
		src = node.WithTimeout(ns.ioTimeout)
	}
	st := &stream{b: &batcher{client: src, maxCmds: ns.maxCmds, maxBytes: ns.maxBytes}, maxBytes: ns.maxBytes}
	src.AddHook(st.queued.Hook())
	ns.known.Store(node.Options().Addr, node)
	m := make(map[*redis.Client]*stream, len(old)+1)
	for n, s := range old {
		if cur, ok := ns.known.Load(n.Options().Addr); !ok || cur == n || s.abandoned.Load() > 0 {
			m[n] = s
		}
	}
	m[node] = st
	ns.m.Store(&m)
	return st, nil
}

// node returns the node client the cluster client keeps for addr, nil
// when it has none.
func (ns *nodeStreams) node(addr string) *redis.Client {
	if addr == "" {
		return nil
	}
	n, ok := ns.known.Load(addr)
	if !ok {
		return nil
	}
	return n.(*redis.Client)
}

// settleAddr waits, within ctx, until the streams of the node clients of
// addr ran every command whose caller stopped waiting.
func (ns *nodeStreams) settleAddr(ctx context.Context, addr string) error {
	for n, st := range *ns.m.Load() {
		if n.Options().Addr == addr {
			if err := st.settle(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// settleAll waits, within ctx, until every stream ran every command whose
// caller stopped waiting.
func (ns *nodeStreams) settleAll(ctx context.Context) error {
	for _, st := range *ns.m.Load() {
		if err := st.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// settle waits, within ctx, until the streams of keys' masters (every
// stream when keys is empty, or when there is no slot map) ran every
// command whose caller stopped waiting. A master with no stream yet has
// nothing to wait for.
func (ns *nodeStreams) settle(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return ns.settleAll(ctx)
	}
	var done [4]*stream
	seen := done[:0]
	for _, k := range keys {
		node, err := ns.cluster.MasterForKey(ctx, k)
		if err != nil {
			return ns.settleAll(ctx)
		}
		st := (*ns.m.Load())[node]
		if st == nil || slices.Contains(seen, st) {
			continue
		}
		seen = append(seen, st)
		if err := st.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// sendCluster is send on a cluster's per-master streams: each command on
// its key's master's stream (a lone caller of a stream, or a large call
// after that stream's abandoned commands, directly through the cluster
// client), then the commands a master redirected sent again. Consecutive
// commands of one slot (a key's) go to one stream, however the slot map
// changes meanwhile.
// It returns the stream whose busy count it raised (nil: none), for send
// to lower when it returns.
func (s *Store) sendCluster(ctx context.Context, large bool, cmds []redis.Cmder) (*stream, error) {
	ns := s.nodes
	key := s.routeKey(cmds[0])
	slot := slotOf(key)
	st, err := ns.streamFor(ctx, key)
	var sts []*stream // per command, when they span several masters
	lastSlot, last := slot, st
	for i := 1; err == nil && i < len(cmds); i++ {
		other := last
		if k := s.routeKey(cmds[i]); slotOf(k) != lastSlot {
			other, err = ns.streamFor(ctx, k)
			lastSlot, last = slotOf(k), other
		}
		switch {
		case err != nil:
		case sts != nil:
			sts = append(sts, other)
		case other != st:
			sts = make([]*stream, i, len(cmds))
			for j := range sts {
				sts[j] = st
			}
			sts = append(sts, other)
		}
	}
	if err != nil {
		// No slot map to route by: the cluster client routes (and fails)
		// each command itself, after every abandoned command ran.
		if err := ns.settleAll(ctx); err != nil {
			return nil, err
		}
		s.direct(ctx, s.once(cmds, false))
		return nil, nil
	}
	switch {
	case large:
		if sts == nil {
			sts = []*stream{st}
		}
		for _, o := range sts {
			if err := o.settle(ctx); err != nil {
				return nil, err
			}
		}
		s.direct(ctx, s.once(cmds, false))
		return nil, nil
	case sts != nil:
		marked := s.once(cmds, true)
		if err := runEach(ctx, sts, marked); err != nil {
			return nil, err
		}
		return nil, s.redirect(ctx, marked)
	case st.busy.Add(1) == 1 && st.abandoned.Load() == 0:
		// A lone caller of its master sends directly.
		s.direct(ctx, s.once(cmds, false))
		return st, nil
	}
	marked := s.once(cmds, true)
	if err := st.run(ctx, marked); err != nil {
		return st, err
	}
	return st, s.redirect(ctx, marked)
}

// redirect sends again the commands (marked as go-redis must not resend
// them) a master did not run: it answered MOVED (the slot moved: the slot
// map reload is asked for) or ASK (the slot is moving and the key is not
// there: ASKING and the command go as one pipeline, on one connection),
// or its node client was closed. Each goes directly to the master the
// reply names, with the caller's ctx, after that master's stream ran the
// commands whose callers stopped waiting; should ctx end while one is on
// its way, its connection fails and is fenced, as a lone caller's direct
// send. A command whose master the cluster client has no node client for,
// or that is redirected again maxRedirects times, goes through the cluster
// client, which follows redirects itself. The commands of one send are
// resent one after the other, in their order; those other callers have in
// flight meanwhile are concurrent with them. It returns ctx's error when
// ctx ended before a resend (the command was not run).
func (s *Store) redirect(ctx context.Context, cmds []redis.Cmder) error {
	for _, c := range cmds {
		for try := 0; ; try++ {
			err := c.Err()
			if err == nil {
				break
			}
			addr, moved := redis.IsMovedError(err)
			askAddr, ask := redis.IsAskError(err)
			if !moved && !ask && !errors.Is(err, redis.ErrClosed) {
				break
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			c.SetErr(nil)
			if moved {
				s.RefreshTopology()
			} else {
				addr = askAddr
			}
			node := s.nodes.node(addr)
			if node == nil || try == maxRedirects {
				_ = s.cluster.Process(ctx, c)
				break
			}
			if err := s.nodes.settleAddr(ctx, addr); err != nil {
				return err
			}
			if !ask {
				_ = node.Process(ctx, c)
				continue
			}
			// ASKING holds for the next command on its connection only: a
			// pipeline keeps the two on one connection, in order.
			_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
				_ = p.Process(ctx, redis.NewStatusCmd(ctx, "asking"))
				_ = p.Process(ctx, c)
				return nil
			})
		}
	}
	return nil
}

// maxRedirects is how many times redirect follows a command's redirects
// to the masters they name before it hands it to the cluster client.
const maxRedirects = 2

// routeKey is the key whose master a single-key command goes to: the key
// it acts on (EVAL and EVALSHA name theirs after the key count); for
// PUBLISH of this Store's announcement, the key it announces (any master
// relays a PUBLISH to the whole cluster: the key's own keeps a hung master
// from holding the announcements of other masters' writes), else its
// channel.
func (s *Store) routeKey(c redis.Cmder) string {
	args := c.Args()
	i := 1
	switch c.Name() {
	case "eval", "evalsha":
		i = 3
	case "publish":
		if k, ok := s.announced(c); ok {
			return k
		}
	}
	if len(args) <= i {
		return ""
	}
	switch k := args[i].(type) {
	case string:
		return k
	case []byte:
		return string(k)
	}
	return ""
}

// runEach queues each command on its stream (sts[i], each a master's
// batcher) and waits for every reply within ctx; when ctx ends first the
// commands not yet answered are abandoned on their streams.
func runEach(ctx context.Context, sts []*stream, cmds []redis.Cmder) error {
	bds := make([]*batchDone, len(cmds))
	for i, c := range cmds {
		bds[i] = sts[i].b.submit([]redis.Cmder{c})
	}
	for i, bd := range bds {
		select {
		case <-bd.done:
			continue
		case <-ctx.Done():
		}
		for j := i; j < len(cmds); j++ {
			sts[j].abandonBatch(cmds[j:j+1], bds[j])
		}
		return ctx.Err()
	}
	return nil
}

// announced returns the key a PUBLISH of this Store's announcement names.
func (s *Store) announced(c redis.Cmder) (string, bool) {
	args := c.Args()
	if len(s.source) == 0 || len(args) != 3 || c.Name() != "publish" {
		return "", false
	}
	msg, ok := args[2].([]byte)
	if !ok || len(msg) < len(s.source) || string(msg[:len(s.source)]) != string(s.source) {
		return "", false
	}
	return string(msg[len(s.source):]), true
}

// directCluster sends cmds through the cluster client, except this
// Store's announcements: each goes, after the other commands, to the
// master of the key it announces.
func (s *Store) directCluster(ctx context.Context, cmds []redis.Cmder) {
	var rest, pubs []redis.Cmder
	var keys []string
	for i, c := range cmds {
		k, ok := s.announced(c)
		if !ok {
			if rest != nil {
				rest = append(rest, c)
			}
			continue
		}
		if rest == nil {
			rest = append(make([]redis.Cmder, 0, len(cmds)), cmds[:i]...)
		}
		pubs, keys = append(pubs, c), append(keys, k)
	}
	switch {
	case rest == nil:
		s.directAll(ctx, cmds)
		return
	case len(rest) > 0:
		s.directAll(ctx, rest)
	}
	for i, c := range pubs {
		node, err := s.cluster.MasterForKey(ctx, keys[i])
		if err != nil {
			c.SetErr(err)
			continue
		}
		_ = node.Process(ctx, c)
	}
}
