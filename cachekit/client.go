package cachekit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/coherence"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/flight"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/swr"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/chunked"
	"github.com/cachekit-io/cachekit-go/internal/names"
	"github.com/cachekit-io/cachekit-go/l1"
	"github.com/cachekit-io/cachekit-go/l2"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// Client is an encrypted two-level cache: an in-process L1 that holds only
// the sealed bytes also stored in L2 (Redis). It is safe for concurrent use.
// Create it with New and release it with Close.
type Client struct {
	prefix     string
	compressed bool
	interop    bool
	// order orders this Client's writes of a key against an interop-mode
	// load's store (keyorder.go); nil outside interop mode or without
	// Redis.
	order       *keyOrder
	jsonTags    bool // Options.StructTag "json"
	defaultTTL  time.Duration
	leaseTTL    time.Duration // Options.LeaseTTL, defaulted
	fleetWait   bool          // Options.FleetSingleFlight
	negTTL      time.Duration // Options.NegativeTTL, normalized; 0: off
	loadTimeout time.Duration
	// maxValue bounds encoded values (Options.MaxValueBytes); limits is the
	// read path's decode bound built from it.
	maxValue int
	maxEntry int // the largest stored entry that can hold maxValue (see open)
	limits   protocol.DecodeLimits

	enc *encryption.Manager // nil: encryption off
	// names maps keys to opaque local names (Encryption.NameKey, see
	// local); nil: keys are stored as they are.
	names *names.Namer
	// aad holds the tenant, prefix, format and compressed components of
	// every AAD this Client builds, validated once in New; aadErr is what
	// building any AAD reports when they are invalid (encryption on only).
	aad       protocol.AADTemplate
	aadErr    error
	l1        *l1.Cache // nil: L1 off
	l2        *l2.Store // nil: L1-only mode
	ownsRedis bool
	pipelined bool // l2 sends through the auto-pipelined stream

	log    *slog.Logger
	now    func() time.Time
	digest observe.Digester // names keys in logs, spans and errors (KeyDigest)

	// large bounds concurrent large seals and opens
	// (Options.LargeValueConcurrency); nil: no bound.
	large *chunked.Slots

	rel *guard.Guard      // nil: reliability off
	swr *swr.State        // nil: SWR off
	inv *coherence.State  // nil: invalidation off
	obs *observe.Observer // nil: neither spans nor metrics
	bg  context.Context   // cancelled by Close: background work stops
	// stopBG cancels bg.
	stopBG context.CancelFunc

	// marker is the name-key marker's key after the prefix (NameMarker);
	// markerKick wakes keepMarker, markerWG waits for it.
	marker     string
	markerKick chan struct{}
	markerWG   sync.WaitGroup

	// bareBound bounds each Redis call without Reliability
	// (Options.bareBound; 0: the default AttemptTimeout).
	bareBound time.Duration

	closed     atomic.Bool
	lastWarn   observe.Limiter
	flights    flight.Group
	leaseWaits flight.Waiters
	stats      observe.Counters

	// openFailedHook, set only by tests before the Client is used, sees
	// every entry that fails to open with the error below the miss: the
	// conformance suite asserts the structural guard's own error through
	// reads (GetOrLoad, MGetOrLoad) that return no error for it.
	openFailedHook func(Tier, error)
}

// New builds a Client from opts, which it does not modify. With encryption
// configured from a static key, the keys are derived here, so the first Set
// and Get already take the synchronous path; with a KeyProvider derivation
// happens on first use (or call Warm).
//
// New does not PING Redis, and Redis being down is not an error: New waits
// at most about a second for invalidation tracking (or its fallback) to be
// in place (not at all once Redis refused the connection) and returns a
// working Client whose calls fail or degrade until Redis answers; only
// Invalidation.RequireTracking makes a refused CLIENT TRACKING fail it.
// Use Ping as a health check. With a name key (Options.Encryption) New
// also writes or checks its marker in Redis, within
// Reliability.AttemptTimeout (Redis not answering is logged, not an
// error), and with NameKeyFromProvider it calls the KeyProvider, within
// LoadTimeout.
func New(opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	c := &Client{
		prefix:      opts.KeyPrefix,
		compressed:  !opts.DisableCompression && !opts.Interop,
		interop:     opts.Interop,
		jsonTags:    opts.StructTag == "json",
		defaultTTL:  cmp.Or(opts.DefaultTTL, defaultTTL),
		leaseTTL:    cmp.Or(opts.LeaseTTL, defaultLeaseTTL),
		fleetWait:   opts.FleetSingleFlight,
		loadTimeout: cmp.Or(opts.LoadTimeout, defaultLoadTimeout),
		maxValue:    cmp.Or(opts.MaxValueBytes, defaultMaxValueBytes),
		log:         cmp.Or(opts.Logger, slog.Default()),
		now:         opts.Clock,
		bareBound:   opts.bareBound,
	}
	if _, err := protocol.NormalizeTTL(c.defaultTTL); err != nil {
		return nil, configErr("DefaultTTL: " + err.Error())
	}
	if opts.NegativeTTL > 0 {
		c.negTTL, _ = protocol.NormalizeTTL(opts.NegativeTTL) // within (0, MaxNegativeTTL]: validated
	}
	c.maxEntry = c.maxValue + c.maxValue/255 + maxEntryOverhead
	c.large = chunked.NewSlots(opts.LargeValueConcurrency, LargeValueBytes, opts.UnboundedLargeValues)
	c.limits = protocol.DecodeLimits{MaxDepth: protocol.DefaultMaxDepth, MaxBytes: c.maxValue}
	if c.now == nil {
		c.now = time.Now
	}
	if err := c.build(opts); err != nil {
		_ = c.closeParts()
		return nil, err
	}
	return c, nil
}

// build makes c's parts from opts; on an error New releases what it made.
func (c *Client) build(opts Options) error {
	c.digest = observe.DigesterFor(opts.Encryption)
	c.bg, c.stopBG = context.WithCancel(context.Background())
	c.flights.Missing, c.flights.Panic = ErrNotFound, flight.Panicked
	c.swr = newSWR(opts.SWR)
	if opts.Invalidation != nil {
		c.inv = newInvalidator(opts.Invalidation)
	}
	if opts.Encryption != nil {
		m, err := encryption.NewManager(*opts.Encryption)
		if err != nil {
			return encryptionErr(err)
		}
		c.enc = m
		if opts.Encryption.Provider == nil {
			if err := m.Warm(context.Background()); err != nil {
				return encryptionErr(err)
			}
		}
		c.aad, c.aadErr = protocol.NewAADTemplate(m.Tenant(), c.prefix, protocol.FormatMsgpack, c.compressed)
		if c.names, err = c.newNamer(&opts, m); err != nil {
			return err
		}
	}
	if opts.L1MaxBytes > 0 {
		cache, err := l1.New(l1.Config{MaxBytes: opts.L1MaxBytes, TTLJitter: opts.L1TTLJitter, Clock: opts.Clock,
			Absent: l2.IsNegative})
		if err != nil {
			return err
		}
		c.l1 = cache
	}
	switch {
	case opts.Redis != nil:
		c.l2 = l2.New(opts.Redis)
	case opts.RedisURL != "":
		attempt := guard.DefaultAttemptTimeout
		if opts.Reliability != nil {
			attempt = guard.Config(*opts.Reliability).WithDefaults().AttemptTimeout
		}
		rdb, err := l2.Open(opts.RedisURL, attempt, attempt+guard.TransferTime(c.maxEntry))
		if err != nil {
			return configErrFrom("RedisURL", err)
		}
		c.l2 = l2.New(rdb)
		c.ownsRedis = true
	}
	if c.l2 != nil && opts.Interop {
		c.order = newKeyOrder()
	}
	obs, err := observe.New(observe.Config{Tracer: opts.TracerProvider, Meter: opts.MeterProvider,
		Digest: c.keyDigest, Errors: &errClasses, Snapshot: c.snapshot, SpansUnderUnsampledParents: opts.SpansUnderUnsampledParents,
		L2DurationSample: opts.L2DurationSample})
	if err != nil {
		return err
	}
	c.obs = obs
	if opts.Reliability != nil {
		c.rel = guard.New(guard.Config(*opts.Reliability), c.guardHooks())
	}
	if c.l2 != nil {
		if err := c.l2.Fence(c.unfenced); err != nil {
			c.log.Info("cachekit: failed connections are not fenced", "error", err)
		} else if n := c.l2.FenceStats().PreDialed; n > 0 {
			c.log.LogAttrs(context.Background(), slog.LevelWarn,
				"cachekit: connections of the injected redis client dialed before New are in use and not fenced until they close: a write abandoned on one may land after a later write (hand the client over before using it)",
				slog.Uint64("connections", n))
		}
		if !opts.DisableAutoPipeline {
			// An opened client's timeouts are sized for the largest value;
			// a stream batch carries values of at most 128 KiB each.
			var batch time.Duration
			if c.ownsRedis {
				batch = c.rel.AttemptTimeout() + guard.TransferTime(streamBatchBytes)
			}
			if err := c.l2.AutoPipeline(batch); err != nil {
				c.log.Info("cachekit: auto-pipelining is off", "error", err)
			} else {
				c.pipelined = true
			}
		}
		if !c.ownsRedis {
			c.l2.CheckDriver(c.log, c.rel.Retries())
		}
		if c.inv != nil && c.inv.Announce {
			c.l2.AnnounceWrites(c.inv.Channel, c.announceFailed)
		}
	}
	if err := c.checkMarker(opts.WarnNameKeyMismatch); err != nil {
		return err
	}
	return c.startInvalidation()
}

// streamBatchBytes is the transfer an auto-pipelined batch of an opened
// client is given time for beyond the attempt timeout: eight times the
// pipeliner's default batch byte limit (128 KiB).
const streamBatchBytes = 8 << 17

// encryptionErr makes an invalid encryption.Config an ErrConfig too.
func encryptionErr(err error) error {
	if errors.Is(err, encryption.ErrInvalidConfig) {
		return configErrFrom("Encryption", err)
	}
	return err
}

// Warm derives the encryption keys now (useful with a slow KeyProvider), so
// the first Set or Get does not wait. It is a no-op without encryption.
func (c *Client) Warm(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.enc == nil {
		return nil
	}
	return c.enc.Warm(ctx)
}

// Close releases the Client: it drops its references to the derived keys
// (raw key bytes were already zeroed at derivation; the AES key schedules
// are left to the garbage collector, as crypto/aes cannot wipe them; the
// name key's HMAC states stay with the Client until it is garbage, as
// crypto/hmac cannot wipe them either),
// cancels loaders and background work, drops L1 and closes a Redis
// connection the Client opened from RedisURL (never an injected one). It is
// idempotent; every call after it returns ErrClosed.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	return c.closeParts()
}

func (c *Client) closeParts() error {
	var err error
	if c.stopBG != nil {
		c.stopBG()
	}
	c.markerWG.Wait()
	c.rel.Stop()
	if c.inv != nil && c.inv.Co != nil {
		_ = c.inv.Co.Close()
		c.inv.Stop()
	}
	if c.swr != nil {
		c.swr.Wait()
	}
	c.obs.Close()
	if c.enc != nil {
		err = c.enc.Close()
	}
	if c.l1 != nil {
		c.l1.Close()
	}
	if c.l2 != nil {
		_ = c.l2.Close() // stops fencing; the go-redis client stays open
		if c.ownsRedis {
			if cerr := c.l2.Client().Close(); err == nil {
				err = cerr
			}
		}
	}
	return err
}

// Encrypted reports whether values are sealed with AES-256-GCM.
func (c *Client) Encrypted() bool { return c.enc != nil }

// fullKey is the Redis key: the prefix and key, a stored key (the
// caller's key, or its opaque name under a name key: see local).
func (c *Client) fullKey(key string) string {
	if c.prefix == "" {
		return key
	}
	return c.prefix + key
}

// scratch buffers for the hot path, pooled so a Get allocates nothing of
// its own. Buffers that grew past maxPooled are dropped, not pooled.
const maxPooled = 256 << 10

type scratch struct {
	aad, plain, value []byte
	inSlot            bool // open holds a large-work slot for the entry it opens
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

func getScratch() *scratch { return scratchPool.Get().(*scratch) }

func putScratch(s *scratch) {
	// The buffers held decrypted bytes: wipe what was used, whether the
	// buffers go back to the pool or to the garbage collector.
	if cap(s.plain) > maxPooled || cap(s.value) > maxPooled || cap(s.aad) > maxPooled {
		chunked.Clear(s.plain)
		chunked.Clear(s.value)
		return
	}
	clear(s.plain)
	clear(s.value)
	s.aad, s.plain, s.value = s.aad[:0], s.plain[:0], s.value[:0]
	scratchPool.Put(s)
}

// Ping checks that Redis answers, within ctx and the reliability stack's
// AttemptTimeout (200 ms by default, with or without Options.Reliability).
// It is a health check: it is sent even while the circuit breaker is open
// and is never retried, and a PING that succeeds closes an open breaker.
// It returns nil in L1-only mode, ErrClosed after Close, and a
// *BackendError when Redis does not answer.
func (c *Client) Ping(ctx context.Context) error {
	if c.closed.Load() {
		return ErrClosed
	}
	if c.l2 == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.rel.AttemptTimeout())
	defer cancel()
	if err := c.l2.Ping(ctx); err != nil {
		return err
	}
	c.rel.Answered()
	return nil
}

// unfenced warns that a failed Redis connection could not be fenced (l2
// says so once per server and reason): a write abandoned on it may still
// land after a later one.
func (c *Client) unfenced(why error) {
	c.log.LogAttrs(context.Background(), slog.LevelWarn,
		"cachekit: a failed redis connection could not be fenced: a write abandoned on it may land after a later write of this client (grant the user +client|kill, +client|info and +client|list)",
		observe.ErrorAttrs(why, errClasses.Class(why))...)
}

// guardHooks connects the reliability stack to what it needs from the
// Client: its clock, a cluster slot-map refresh after transient failures,
// a PING that bypasses the stack for the breaker's background prober,
// Close's context, the retry metric, a span event for each refused call,
// and a log line and a metric for every breaker transition.
func (c *Client) guardHooks() guard.Hooks {
	h := guard.Hooks{Now: c.now, Transition: guard.LogTransitions(c.log, c.now, c.obs.BreakerTransition)}
	if c.l2 != nil {
		h.Transient, h.Ping, h.Background = c.l2.RefreshTopology, c.l2.Ping, c.bg
	}
	if c.obs != nil {
		h.Retry = c.obs.Retry
	}
	if c.obs.Tracing() {
		h.Refuse = func(ctx context.Context) { c.obs.Event(ctx, "cachekit.breaker_refused") }
	}
	return h
}

// NameMarker returns the key, after Options.KeyPrefix, of the marker a
// Client with a name key keeps for tenant (Encryption.Tenant): it holds the
// name key's fingerprint (hex, 32 digits). The key is "cachekit:name-key:"
// and 32 hex digits of a SHA-256 of the tenant: one marker per tenant (the
// names of two tenants never meet), and no tenant in clear. No opaque
// name contains ':', so it is never an entry's name.
func NameMarker(tenant string) string {
	sum := sha256.Sum256(append([]byte("cachekit name-key marker v1\x00"), tenant...))
	return "cachekit:name-key:" + hex.EncodeToString(sum[:16])
}

// markerEvery is how often a Client with a name key writes or checks its
// marker again where no tracking reports the marker's loss (an eviction,
// a DEL, FLUSHDB): the bound on how long the marker can stay missing.
const markerEvery = time.Second

// newNamer returns the Namer of opts' name key, nil without one. A name
// key the provider supplies (Encryption.NameKeyFromProvider) is fetched
// now, within LoadTimeout: names are needed before the first Redis call.
func (c *Client) newNamer(opts *Options, m *encryption.Manager) (*names.Namer, error) {
	key := opts.Encryption.NameKey
	if opts.Encryption.NameKeyFromProvider {
		ctx, cancel := context.WithTimeout(c.bg, c.loadTimeout)
		err := m.Warm(ctx)
		cancel()
		if err != nil {
			return nil, encryptionErr(err)
		}
		key = m.NameKey()
		defer clear(key)
	}
	if key == nil {
		return nil, nil
	}
	if strings.LastIndex(opts.KeyPrefix, "{") > strings.LastIndex(opts.KeyPrefix, "}") {
		// No opaque name contains '}': the hash tag would never close, and
		// keys meant to share a Cluster slot would spread over all of them.
		return nil, configErr("KeyPrefix: an unclosed '{' with a name key (opaque names never close it)")
	}
	// The memo holds about one name per 4 KiB of L1 (16384 at the presets'
	// 64 MiB), at least 4096.
	n, err := names.New(key, m.Tenant(), opts.KeyPrefix, max(4096, int(opts.L1MaxBytes>>12)))
	if err != nil {
		return nil, configErrFrom("Encryption.NameKey", err)
	}
	return n, nil
}

// checkMarker writes the name key's marker (NameMarker) under the prefix,
// or compares the one Redis holds: a mismatch is a *NameKeyMismatchError,
// or with Options.WarnNameKeyMismatch a warning. Redis not answering is
// not an error (New does not need Redis); it is logged. Then it starts
// keeping the marker (keepMarker).
func (c *Client) checkMarker(warnOnly bool) error {
	if c.names == nil || c.l2 == nil {
		return nil
	}
	c.marker = NameMarker(c.enc.Tenant())
	c.markerKick = make(chan struct{}, 1)
	ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
	defer cancel()
	e, err := c.markMarker(ctx)
	switch {
	case err != nil:
		c.warn("could not check the name-key marker: a mixed fleet goes undetected", "", err)
	case e != nil && !warnOnly:
		return e
	case e != nil:
		c.log.LogAttrs(ctx, slog.LevelWarn, "cachekit: name-key marker mismatch (WarnNameKeyMismatch): "+e.Error())
	}
	c.markerWG.Add(1)
	go c.keepMarker()
	return nil
}

// markMarker writes the marker unless Redis holds one, and returns the
// mismatch when it holds another name key's.
func (c *Client) markMarker(ctx context.Context) (*NameKeyMismatchError, error) {
	want := c.names.Fingerprint()
	found, err := c.l2.Marker(ctx, c.fullKey(c.marker), want)
	if err != nil || found == want {
		return nil, err
	}
	if !names.IsFingerprint(found) {
		found = "not a marker"
	}
	return &NameKeyMismatchError{Marker: c.fullKey(c.marker), Found: found, Want: want}, nil
}

// keepMarker writes the marker again once it is lost (evicted, deleted,
// flushed, gone with a restart), so that a Client with another name key
// starting later is refused: at once when tracking reports the loss
// (onInvalidation kicks it) or comes back (a restart sends no
// invalidation: modeChanged kicks it), else every markerEvery, and every
// markerEvery in any mode while the last write failed. A mismatch found then (a Client with
// another name key started while the marker was missing) is counted in
// Stats.NameKeyMismatches and logged as an error when it starts; this
// Client goes on serving the entries stored under its own names, which
// the other Client's writes and deletes do not reach, until an operator
// gives the fleet one name key.
func (c *Client) keepMarker() {
	defer c.markerWG.Done()
	t := time.NewTicker(markerEvery)
	defer t.Stop()
	mismatched := false
	held := true // the last write or check of the marker answered
	for {
		select {
		case <-c.bg.Done():
			return
		case <-c.markerKick:
		case <-t.C:
			if held && c.inv != nil && c.inv.Heard() == coherence.ModeTracking {
				continue // tracking reports the marker's loss
			}
		}
		ctx, cancel := context.WithTimeout(c.bg, c.rel.AttemptTimeout())
		e, err := c.markMarker(ctx)
		cancel()
		held = err == nil
		switch {
		case err != nil:
		case e == nil:
			mismatched = false
		default:
			c.stats.NameKeyMismatches.Add(1)
			if !mismatched {
				c.log.LogAttrs(context.Background(), slog.LevelError, e.Error()+
					"; a Client with another name key started while the marker was missing: this Client serves the entries under its own names, which that Client's writes and deletes do not reach")
			}
			mismatched = true
		}
	}
}

// markerLost kicks keepMarker when tracking reports the marker key written
// (keys: local names) or every key (nil: FLUSHDB, FLUSHALL).
func (c *Client) markerLost(keys []string) {
	if c.markerKick == nil || keys != nil && !slices.Contains(keys, c.marker) {
		return
	}
	select {
	case c.markerKick <- struct{}{}:
	default:
	}
}

// local returns the name that stands for key below the public calls: key
// itself without a name key, else its opaque local name (memoized). A
// public call maps its key once, where it enters; below, every path (L1,
// Redis, the AAD, leases, tracking, single-flight, SWR, digests) works on
// the local name, and the batch calls map their maps back
// (internal/names).
func (c *Client) local(key string) string {
	if c.names == nil {
		return key
	}
	return c.names.Local(key)
}
