package l2

import (
	"context"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/internal/seam"
	"github.com/cachekit-io/cachekit-go/l2/internal/fence"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Store runs CacheKit's Redis commands on a go-redis client. It is safe for
// concurrent use. Values go to Redis and come back as opaque bytes.
type Store struct {
	rdb     redis.UniversalClient
	cluster *redis.ClusterClient // rdb, when it is a cluster client
	closed  atomic.Bool
	// reloaded is when RefreshTopology last asked for a slot-map reload
	// (UnixNano).
	reloaded atomic.Int64
	// channel and source announce writes (AnnounceWrites); "" and nil: off.
	channel string
	source  []byte
	// pubFails counts announcements that failed (PublishFailures);
	// pubFailed hears a write's failed announcement (AnnounceWrites).
	pubFails  atomic.Uint64
	pubFailed func(op string, keys []string, err error)
	// pubRefused is when Redis last refused a PUBLISH (UnixNano, 0:
	// never): announcements pause for trackRefusedRetry after it.
	pubRefused atomic.Int64
	// stream is the auto-pipelined stream (AutoPipeline) of a single
	// server, nodes those of a cluster's masters; both nil: off.
	stream *stream
	nodes  *nodeStreams
	// seam is the test hook that sees each command send sends
	// (internal/seam.Install).
	seam atomic.Pointer[seam.Hook]
	// fencer fences failed connections (Fence); nil: off.
	fencer *fence.Fencer
	// resends is set when the client retries commands on its own
	// (MaxRetries > 0): the Store then marks its commands as go-redis
	// must not resend (see once.go).
	resends bool
}

// refreshEvery bounds how often RefreshTopology reloads a cluster's slot map.
const refreshEvery = 250 * time.Millisecond

// RefreshTopology tells a cluster client to re-read the slot map soon (in
// the background, at most every 250 ms); it does nothing for other
// clients. Callers use it after a connection failure: go-redis re-reads the
// map on MOVED and ASK, and otherwise only every
// ClusterStateReloadInterval (60 s by default), so without it commands
// keep going to a dead master's address after a replica took over.
func (s *Store) RefreshTopology() {
	if s.cluster == nil || s.closed.Load() {
		return
	}
	now := time.Now().UnixNano()
	last := s.reloaded.Load()
	if now-last < int64(refreshEvery) || !s.reloaded.CompareAndSwap(last, now) {
		return
	}
	s.cluster.ReloadState(context.Background())
}

// New returns a Store using rdb, which may be a *redis.Client, a
// *redis.ClusterClient, a failover client or a *redis.Ring. The Store does
// not own rdb: Close leaves it open. A nil rdb yields a Store whose every
// call fails with a *BackendError.
//
// A client that retries commands on its own (go-redis's MaxRetries,
// default 3) would resend a write whose reply was lost, which may land
// twice: the Store's writes are marked so that it never resends them (see
// once.go); its reads it may retry. A cluster client resends a command
// that failed on the network up to MaxRedirects times (default 3) even
// with MaxRetries -1: its writes are marked too.
func New(rdb redis.UniversalClient) *Store {
	s := &Store{rdb: rdb}
	s.cluster, _ = rdb.(*redis.ClusterClient)
	if rdb != nil {
		_, retries, _ := s.driverSettings()
		// A cluster client also resends a command that failed on the
		// network (a timeout included) up to MaxRedirects times, whatever
		// MaxRetries says.
		s.resends = retries > 0 || s.cluster != nil && s.cluster.Options().MaxRedirects > 0
	}
	return s
}

// Open parses a Redis URL and returns a new client; the caller owns it and
// must Close it. On failure the error wraps ErrInvalidURL and never repeats
// the URL, which may hold credentials.
//
// A redis://, rediss:// or unix:// URL (see redis.ParseURL for the accepted
// options) yields a standalone *redis.Client. A redis+cluster:// or
// rediss+cluster:// URL yields a *redis.ClusterClient: its host is one seed
// node and each addr query parameter adds another, for example
// redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7000&addr=10.0.0.3:7000 (see
// redis.ParseClusterURL for the other options).
//
// The client is built for a caller that retries on its own and bounds
// every call: go-redis's command retries are off (MaxRetries -1; a cluster
// client still follows MOVED and ASK redirects), a failed dial is not
// retried inside the command (DialerRetries 1), the ctx deadline bounds
// dialing, reads and writes (ContextTimeoutEnabled), and timeout, when
// positive, is the dial and pool-wait timeout and ioTimeout the read and
// write timeout, unless the URL sets its own (dial_timeout, read_timeout,
// write_timeout, pool_timeout). A read or write ends at the earlier of its
// ctx deadline and its timeout, so ioTimeout must leave room for the
// largest value the caller sends.
//
// Maintenance notifications (go-redis's handling of Redis Enterprise's
// MOVING and MIGRATING pushes, on by default in ModeAuto) are off: a
// handoff is a connection swap under traffic, and go-redis v9.23 could give
// one connection two owners there, each reading the other's replies (fixed
// in v9.24, #4110). With encryption a swapped reply fails to open; without
// it, it would be served as the value. No test here can drive a handoff
// (Redis 7 sends no such push), so the feature stays off until one does.
// An injected client keeps its own setting.
func Open(rawURL string, timeout, ioTimeout time.Duration) (redis.UniversalClient, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, &urlError{reason: "malformed URL"}
	}
	switch u.Scheme {
	case "redis", "rediss", "unix":
	case "redis+cluster", "rediss+cluster":
		u.Scheme = strings.TrimSuffix(u.Scheme, "+cluster")
		opts, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, &urlError{reason: "bad host, port or query option"}
		}
		for _, a := range opts.Addrs {
			if !validPort(a) {
				return nil, &urlError{reason: "port must be a number from 1 to 65535"}
			}
		}
		bounds{&opts.MaxRetries, &opts.DialerRetries, &opts.ContextTimeoutEnabled,
			&opts.DialTimeout, &opts.PoolTimeout, &opts.ReadTimeout, &opts.WriteTimeout,
			&opts.MaintNotificationsConfig}.set(timeout, ioTimeout)
		return redis.NewClusterClient(opts), nil
	default:
		return nil, &urlError{reason: "scheme must be redis, rediss, unix, redis+cluster or rediss+cluster"}
	}
	opts, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, &urlError{reason: "bad host, port, database number or query option"}
	}
	if opts.Network == "tcp" && !validPort(opts.Addr) {
		return nil, &urlError{reason: "port must be a number from 1 to 65535"}
	}
	bounds{&opts.MaxRetries, &opts.DialerRetries, &opts.ContextTimeoutEnabled,
		&opts.DialTimeout, &opts.PoolTimeout, &opts.ReadTimeout, &opts.WriteTimeout,
		&opts.MaintNotificationsConfig}.set(timeout, ioTimeout)
	return redis.NewClient(opts), nil
}

// bounds points at the option fields Open sets on a standalone or a
// cluster client's options alike.
type bounds struct {
	maxRetries, dialerRetries *int
	ctxTimeout                *bool
	dial, pool, read, write   *time.Duration
	maint                     **maintnotifications.Config
}

// set turns go-redis's retries and maintenance notifications off, dials
// once per attempt, honours ctx deadlines, and makes timeout the dial and pool-wait timeouts and
// ioTimeout the read and write timeouts where the URL set none.
func (b bounds) set(timeout, ioTimeout time.Duration) {
	*b.maxRetries, *b.dialerRetries, *b.ctxTimeout = -1, 1, true
	*b.maint = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	for _, d := range []struct {
		field *time.Duration
		t     time.Duration
	}{{b.dial, timeout}, {b.pool, timeout}, {b.read, ioTimeout}, {b.write, ioTimeout}} {
		if *d.field == 0 && d.t > 0 {
			*d.field = d.t
		}
	}
}

// validPort reports whether addr's port is a number from 1 to 65535.
func validPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	return err == nil && perr == nil && n >= 1 && n <= 65535
}

// urlError is ErrInvalidURL with a reason that contains no part of the URL.
type urlError struct{ reason string }

func (e *urlError) Error() string { return ErrInvalidURL.Error() + ": " + e.reason }
func (e *urlError) Unwrap() error { return ErrInvalidURL }

// Client returns the go-redis client the Store was built with.
func (s *Store) Client() redis.UniversalClient { return s.rdb }

// driverSettings reports the go-redis client's settings that decide
// whether a Redis call can outlive its caller's deadline
// (ContextTimeoutEnabled) and whether it retries on its own (MaxRetries);
// known is false for a client type other than go-redis's Client,
// ClusterClient and Ring.
func (s *Store) driverSettings() (ctxTimeouts bool, retries int, known bool) {
	switch r := s.rdb.(type) {
	case *redis.Client:
		return r.Options().ContextTimeoutEnabled, r.Options().MaxRetries, true
	case *redis.ClusterClient:
		return r.Options().ContextTimeoutEnabled, r.Options().MaxRetries, true
	case *redis.Ring:
		return r.Options().ContextTimeoutEnabled, r.Options().MaxRetries, true
	}
	return false, 0, false
}

// Close makes every later call return ErrClosed and stops fencing (held
// writes go, kills in progress end). It does not close the go-redis
// client. It is idempotent and always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	if s.fencer != nil {
		s.fencer.Close()
	}
	return nil
}

// check returns the error every operation reports before touching Redis.
func (s *Store) check(op string) error {
	if s.closed.Load() {
		return ErrClosed
	}
	if s.rdb == nil {
		return &BackendError{Op: op, Err: errNoClient}
	}
	return nil
}

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.check("ping"); err != nil {
		return err
	}
	return fail("ping", s.rdb.Ping(ctx).Err())
}

// Get returns the value of key, or ErrNotFound. The returned slice is a
// fresh allocation owned by the caller.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.check("get"); err != nil {
		return nil, err
	}
	// go-redis reads the reply into a fresh []byte and Bytes hands back
	// that very buffer, so there is no copy and nothing else aliases it.
	get := redis.NewStringCmd(ctx, "get", key)
	if err := s.send(ctx, false, get); err != nil {
		return nil, fail("get", err)
	}
	b, err := get.Bytes()
	if err != nil {
		return nil, fail("get", err)
	}
	if IsLease(b) {
		return nil, ErrNotFound
	}
	return b, nil
}

// GetWithTTL returns the value of key and its remaining time to live, read
// with GET and PTTL in one pipelined round trip. The TTL is 0 when the key
// has no expiry, and at least 1ms otherwise (Redis reports whole
// milliseconds; less than one left is reported as 1ms). A key missing, or
// expiring between the two commands, yields ErrNotFound.
func (s *Store) GetWithTTL(ctx context.Context, key string) ([]byte, time.Duration, error) {
	return s.getTTL(ctx, key, redis.NewStringCmd(ctx, "get", key), false)
}

// getTTL is GetWithTTL and GetWithTTLUpTo: the value read (get) and PTTL
// sent together (large: off the stream); a lease, a key missing, or
// expiring between the two commands, yields ErrNotFound.
func (s *Store) getTTL(ctx context.Context, key string, get *redis.StringCmd, large bool) ([]byte, time.Duration, error) {
	if err := s.check("getttl"); err != nil {
		return nil, 0, err
	}
	pttl := redis.NewDurationCmd(ctx, time.Millisecond, "pttl", key)
	if err := s.send(ctx, large, get, pttl); err != nil {
		return nil, 0, fail("getttl", err)
	}
	b, err := get.Bytes()
	if err != nil {
		return nil, 0, fail("getttl", err)
	}
	if err := pttl.Err(); err != nil {
		return nil, 0, fail("getttl", err)
	}
	ttl, found := fromPTTL(pttl.Val())
	if !found || IsLease(b) {
		return nil, 0, ErrNotFound
	}
	return b, ttl, nil
}

// Set stores val under key with SET PX. ttl must be positive (else
// ErrInvalidTTL, and nothing is sent); it is truncated to whole
// milliseconds, and a ttl under 1ms becomes 1ms.
func (s *Store) Set(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	if err := s.check("set"); err != nil {
		return err
	}
	if ttl <= 0 {
		return ErrInvalidTTL
	}
	cmd := setCmd(ctx, key, val, ttl)
	if s.announcing() {
		return s.setPublish(ctx, cmd, key, s.large(len(val)))
	}
	if err := s.send(ctx, s.large(len(val)), cmd); err != nil {
		return fail("set", err)
	}
	return fail("set", cmd.Err())
}

// Delete removes keys and returns how many held an entry (a placeholder is
// removed, which voids a lease, but not counted): each key's probe and
// DEL, single-key commands sent together (a cluster client
// routes each to its node in the same round trip).
func (s *Store) Delete(ctx context.Context, keys ...string) (int64, error) {
	if err := s.check("del"); err != nil {
		return 0, err
	}
	if len(keys) == 0 {
		return 0, nil
	}
	if s.announcing() {
		return s.deletePublish(ctx, keys)
	}
	n, err := s.deleteCounted(ctx, keys)
	return n, fail("del", err)
}

// sumDeleted adds up the keys a pipeline of DEL or UNLINK commands
// removed, stopping at the first failed command (the count so far and its
// error).
func sumDeleted(cmds []*redis.IntCmd) (int64, error) {
	var total int64
	for _, c := range cmds {
		n, err := c.Result()
		if err != nil {
			return total, fail("del", err)
		}
		total += n
	}
	return total, nil
}

// Exists reports whether key exists and holds no placeholder (a lease, a
// negative entry: it reads 12 bytes and cannot authenticate them).
func (s *Store) Exists(ctx context.Context, key string) (bool, error) {
	if err := s.check("exists"); err != nil {
		return false, err
	}
	ok, err := s.existsKey(ctx, key)
	if err != nil {
		return false, fail("exists", err)
	}
	return ok, nil
}

// TTL returns the remaining time to live of key: 0 when it has no expiry,
// at least 1ms otherwise. A missing key, or one holding a placeholder, yields
// ErrNotFound.
func (s *Store) TTL(ctx context.Context, key string) (time.Duration, error) {
	if err := s.check("ttl"); err != nil {
		return 0, err
	}
	d, err := s.pttlKey(ctx, key)
	if err != nil {
		return 0, fail("ttl", err)
	}
	ttl, found := fromPTTL(d)
	if !found {
		return 0, ErrNotFound
	}
	return ttl, nil
}

// fromPTTL interprets go-redis's PTTL result: -2ns for a missing key, -1ns
// for no expiry, otherwise whole milliseconds.
func fromPTTL(d time.Duration) (ttl time.Duration, found bool) {
	switch {
	case d == -2:
		return 0, false
	case d == -1:
		return 0, true
	case d < time.Millisecond:
		// Under a millisecond left, or a reply outside the protocol:
		// report the smallest positive TTL so that 0 keeps meaning
		// "no expiry".
		return time.Millisecond, true
	default:
		return d, true
	}
}

// pxMillis converts a positive ttl to the PX argument.
func pxMillis(ttl time.Duration) int64 {
	return max(ttl.Milliseconds(), 1)
}

// setCmd builds SET key val PX ms.
func setCmd(ctx context.Context, key string, val []byte, ttl time.Duration) *redis.StatusCmd {
	return redis.NewStatusCmd(ctx, "set", key, val, "px", pxMillis(ttl))
}

// Marker stores value under key, without expiry, unless key already holds
// a string, and returns what key holds afterwards: value when it stored
// it, the earlier string otherwise (SET NX, then GET when the SET found
// the key taken). A key of another Redis type is an error.
func (s *Store) Marker(ctx context.Context, key, value string) (string, error) {
	if err := s.check("marker"); err != nil {
		return "", err
	}
	setNX := redis.NewBoolCmd(ctx, "set", key, value, "nx")
	if err := s.send(ctx, false, setNX); err != nil {
		return "", fail("marker", err)
	}
	ok, err := setNX.Result()
	if err != nil {
		return "", fail("marker", err)
	}
	if ok {
		return value, nil
	}
	get := redis.NewStringCmd(ctx, "get", key)
	if err := s.send(ctx, false, get); err != nil {
		return "", fail("marker", err)
	}
	found, err := get.Result()
	if err != nil {
		return "", fail("marker", err)
	}
	return found, nil
}
