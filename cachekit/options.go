package cachekit

import (
	"cmp"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/coherence"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/guard"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/swr"
	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/protocol"
)

// MasterKeyEnv is the environment variable the Secure preset reads the hex
// master key from when none is passed. Its presence alone never turns
// encryption on: only Secure or a non-nil Options.Encryption does.
const MasterKeyEnv = "CACHEKIT_MASTER_KEY"

// PreviousMasterKeysEnv is the environment variable Secure("") reads the
// decrypt-only previous master keys from: comma-separated hex keys, at most
// three (see encryption.ParseMasterKeyListHex).
const PreviousMasterKeysEnv = "CACHEKIT_PREVIOUS_MASTER_KEYS"

// NameKeyEnv is the environment variable Secure reads the hex name key
// from (64 hex digits; see encryption.Config.NameKey).
const NameKeyEnv = "CACHEKIT_NAME_KEY"

// RedisURLEnv is the environment variable the examples and the command-line
// tool read a Redis URL from. The library itself never reads it.
const RedisURLEnv = "CACHEKIT_REDIS_URL"

// Preset names the intent an Options value was built for.
type Preset string

// The presets of the CacheKit protocol that apply to this SDK.
const (
	PresetCustom     Preset = ""
	PresetMinimal    Preset = "minimal"
	PresetProduction Preset = "production"
	PresetSecure     Preset = "secure"
)

// Options configures a Client. New never modifies it. The zero value is not
// usable on its own (it has neither L1 nor Redis): start from a preset
// (Minimal, Production, Secure) or set Redis/RedisURL and/or L1MaxBytes.
type Options struct {
	// Redis is an injected go-redis client (standalone, cluster, sentinel
	// failover or ring). The Client uses it but never closes it, and never
	// changes its settings: for calls bounded by the caller's deadline and
	// Reliability's timeouts, build it with ContextTimeoutEnabled: true,
	// MaxRetries: -1 (Reliability retries; two retry layers multiply) and
	// dial/read/write timeouts no longer than Reliability.AttemptTimeout.
	// New logs a warning when an injected *redis.Client, *redis.ClusterClient
	// or *redis.Ring has ContextTimeoutEnabled off.
	// Default: nil (then RedisURL is used; with neither, L1-only mode).
	Redis redis.UniversalClient

	// RedisURL is used when Redis is nil: a redis://, rediss:// or unix://
	// URL for one server, or a redis+cluster:// or rediss+cluster:// URL for
	// a Redis Cluster, naming one seed node as its host and any others as
	// addr query parameters
	// (redis+cluster://10.0.0.1:7000?addr=10.0.0.2:7000). The Client owns
	// the connection it opens and closes it on Close.
	// That go-redis client is built to be bounded: no retries of its own,
	// one dial per attempt, ctx deadlines honoured (every call carries
	// one: the Client's attempt bound or the caller's), maintenance
	// notifications off, Reliability.AttemptTimeout (200 ms by default,
	// also when Reliability is nil) as its dial and pool-wait timeouts, and
	// AttemptTimeout plus the transfer of the largest entry MaxValueBytes
	// allows at 16 MiB/s (4.2 s at the 64 MiB default) as its read and
	// write timeouts, unless the URL sets them.
	// Default: "" (no Redis: L1-only mode).
	//
	// Redis down when New runs is not an error: New does not PING (call
	// Client.Ping for that) and returns within about a second (its wait
	// for invalidation tracking or its fallback). Calls then fail, or
	// degrade under FailOpen, until Redis answers; with Invalidation on,
	// L1 is bypassed until then.
	RedisURL string

	// L1MaxBytes bounds what the in-process L1 charges its entries, each
	// for its sealed bytes (plus a 10-byte header; over 8 KiB from 16 MiB, Go's
	// allocation size) and l1.EntryOverhead (185 B on Go 1.26; no key kept).
	// l1.FixedBytes(L1MaxBytes) comes on top (12.3 MiB at 64 MiB); the heap
	// a full L1 held measured within 1.5 × L1MaxBytes plus FixedBytes at 16
	// and 64 MiB (bench/README.md has the figures). 0 disables L1.
	// Default: 0; every preset sets 64 MiB.
	L1MaxBytes int64

	// L1TTLJitter shortens each L1 entry's lifetime by a random fraction up
	// to this value (0 to 0.5), so entries written together do not expire
	// together. Default: 0 (no jitter).
	L1TTLJitter float64

	// KeyPrefix is prepended to every key before it reaches Redis (and is
	// part of the authenticated cache key). Interop mode refuses it.
	// Default: "".
	KeyPrefix string

	// Encryption turns on AES-256-GCM encryption of every value in every
	// tier. nil means off; a master key in the environment never switches
	// it on. Default: nil (Secure sets it). With Encryption.NameKey (or
	// NameKeyFromProvider), Redis holds opaque key names: see the package
	// doc, "Key names".
	Encryption *encryption.Config

	// RequireEncryption makes New fail when Encryption is nil: the Secure
	// preset's fail-closed guarantee. Default: false (Secure sets true).
	RequireEncryption bool

	// DisableCompression stores plain msgpack instead of the ByteStorage
	// envelope (LZ4 + xxHash3-64): a container with no checksum of its own
	// (with encryption, AES-GCM still authenticates it). Such a Client
	// refuses an entry whose payload has the exact shape of an envelope
	// (another SDK's auto-mode container, e.g. cachekit-ts's default, or an
	// entry written with compression on: an error matching
	// protocol.ErrForeignContainer, read as a miss) and, so that it never
	// stores what it would refuse, a value of that exact shape: a 4-element
	// array of bytes (or of integers 0-255), 8 integers 0-255, a
	// non-negative integer and "msgpack", "orjson" or "arrow". Default:
	// false (compression on).
	DisableCompression bool

	// Interop switches to the protocol's cross-SDK interop mode: keys are
	// interop/v1 keys ("{namespace}:{operation}:{args_hash}", see InteropKey),
	// values are one canonical msgpack document, the AAD says
	// compressed="False", and KeyPrefix must be empty. Default: false.
	Interop bool

	// StructTag chooses how struct fields are named in stored maps: ""
	// (default) uses a field's `msgpack` tag, else its Go name; "json" uses
	// the `msgpack` tag, else the `json` tag, else the Go name, so types
	// tagged for JSON need no second set of tags, and a value an operator
	// writes as JSON with the cachekit command ({"id": 42}) reads back into
	// a field tagged `json:"id"`. Both sides of a key must agree: a Client
	// with "json" reads a struct another Client wrote with "" by Go names.
	// With "json", struct values decode through msgpack's reflection
	// decoder (about as fast as go-redis/cache's), not the fast decoder the
	// default uses for common struct shapes. Other values: ErrConfig.
	StructTag string

	// DefaultTTL is the lifetime Set uses. Default: 0, which New treats as
	// 10 minutes (the production preset's 600 s); presets set their own.
	DefaultTTL time.Duration

	// LeaseTTL is the lifetime of the lease a GetOrLoad, GetOrLoadTTL or
	// MGetOrLoad miss plants in Redis before it loads (see GetOrLoadTTL):
	// the loading Client renews it every LeaseTTL/3 until its store has
	// answered, so it bounds how long a key stays blocked after its
	// loader's process died (another Client takes over a lease with less
	// than half of its holder's LeaseTTL left: the lease carries it), not
	// how long a load may take. Clients sharing keys may differ in it,
	// except beside Clients released before the lease carried it, which
	// judge every lease by their own. Default: 0, which New treats as 5
	// seconds.
	LeaseTTL time.Duration

	// NegativeTTL turns on negative caching: a "not found" a loader returns
	// (ErrNotFound, or an error wrapping it, from a GetOrLoad, GetOrLoadTTL
	// or an SWR refresh loader; a key an MGetOrLoad loader leaves out of its
	// map) is cached for NegativeTTL, or for what the loader chose with
	// OverrideTTL before returning it (capped at MaxNegativeTTL), as a
	// negative entry in Redis and L1, so the next GetOrLoad of the key
	// returns a *NegativeHitError (matching ErrNotFound) without loading.
	// It lands like a value: under the load's lease (a write of the key
	// made while the loader ran wins; it never overwrites a value), replaced
	// by every write of the key by anyone (a SetIfAbsent treats it as
	// absent), dropped from L1 by invalidation; with encryption it is sealed
	// and bound to its key, and carries a sealed not-after. See
	// docs/production.md, "Negative caching". It is off by default, in
	// every preset, because it changes what a loader's ErrNotFound means: a
	// source insert that writes no cache key (neither Set nor Delete)
	// stays hidden for up to NegativeTTL. Under a second it is rounded up
	// to a second; over MaxNegativeTTL, or with Interop (the protocol has
	// no negative entry other SDKs would know), it is an ErrConfig. A
	// Client with it off reads another's negative entries as not found,
	// and its GetOrLoad loads and replaces them. Default: 0 (off).
	NegativeTTL time.Duration

	// FleetSingleFlight makes a GetOrLoad miss that finds another Client's
	// lease on the key (another process loading it) wait for that load's
	// result instead of running its own loader: a fleet missing one key
	// runs one load. The waiter is woken by the key's invalidation
	// (Invalidation on), or looks again with a backoff capped at 50 ms;
	// it re-reads after every wake, and stops waiting when its ctx ends,
	// when the lease is gone or abandoned (the holder failed or died: one
	// waiter takes it over once less than half of LeaseTTL is left, and
	// loads), or after half of LoadTimeout (then it loads and returns its
	// own value without storing it). Without it such a miss loads and returns its value without
	// storing it (the holder's store wins). In interop mode, where other
	// SDKs read the keys and know no lease, it takes the family's
	// {key}:lock (SET NX PX LeaseTTL) instead and polls for the holder's
	// result. Default: false; Production and Secure set true.
	FleetSingleFlight bool

	// MaxValueBytes bounds a value's encoded (msgpack) size, in both
	// directions: Set, MSet and a load's store refuse a larger value with an
	// error matching ErrValueTooLarge before compressing, encrypting or
	// sending anything; a read refuses an entry that claims to be larger
	// before allocating for it, with a *FormatError that names
	// MaxValueBytes and matches protocol.ErrTooLarge. A Get (GetWithTTL,
	// GetBytes, AppendValue, GetOrLoad's read) asks Redis for at most the
	// largest entry such a value can make plus one byte (GETRANGE; about
	// MaxValueBytes + MaxValueBytes/255 + 284 bytes), so one hostile entry
	// cannot make every Get read hundreds of MiB; an MGet (MGET, or a
	// script per slot on a cluster) reads each value whole before refusing
	// it, so a hostile value costs its size in memory once per MGet that
	// names it. At most 512 MiB, the protocol's limit. Default: 0, which New
	// treats as 64 MiB.
	MaxValueBytes int

	// LargeValueConcurrency bounds how many large values (LargeValueBytes
	// or more, encoded or stored) this Client seals or opens at once, in
	// all its operations together; the others wait for a slot, as long as
	// their ctx allows (a ctx that ends first returns its error). Sealing
	// and opening a large value is CPU work of milliseconds per MiB:
	// unbounded, a burst of large Sets occupies every P and small requests
	// wait behind them. Default: 0, which New treats as GOMAXPROCS-1 (at
	// New), at least 1, so one P stays free for everything else. Negative
	// is an ErrConfig; UnboundedLargeValues removes the bound.
	LargeValueConcurrency int

	// UnboundedLargeValues lets any number of large values be sealed and
	// opened at once (LargeValueConcurrency must then be 0). Default:
	// false.
	UnboundedLargeValues bool

	// LoadTimeout bounds each GetOrLoad loader run, in the foreground or as
	// an SWR refresh: the loader's ctx ends when it has passed, when Close
	// is called, or (foreground) when every caller waiting for the load has
	// given up; callers stop waiting then even if the loader does not
	// return. Default: 0, which New treats as 30 seconds.
	LoadTimeout time.Duration

	// Logger receives warnings (never keys, values or key material; keys
	// appear only as a short BLAKE2b digest). Default: slog.Default().
	Logger *slog.Logger

	// Clock returns the current time; for tests. Default: time.Now.
	Clock func() time.Time

	// WarnNameKeyMismatch makes New log a warning, instead of failing with
	// a *NameKeyMismatchError, when Redis holds under KeyPrefix the marker
	// of another name key (Encryption.NameKey). Default: false (New fails).
	WarnNameKeyMismatch bool

	// bareBound, when positive, replaces the default AttemptTimeout as the
	// bound of each Redis call when Reliability is nil. The package's
	// tests widen it (a loaded test machine answers slower than 200 ms);
	// nothing else can set it.
	bareBound time.Duration

	// Preset records which preset built these options. New checks the
	// guarantee PresetSecure implies (Encryption must be set); the others
	// are informational. Default: PresetCustom.
	Preset Preset

	// Reliability puts retries, a circuit breaker, backpressure and (with
	// FailOpen) degradation around every Redis call; see Reliability for
	// each knob. Default: nil (off: the first Redis error reaches the
	// caller). Production sets &Reliability{FailOpen: true}; Secure sets
	// &Reliability{} (fail closed).
	Reliability *Reliability

	// SWR turns on stale-while-revalidate in GetOrLoad; see SWR. It needs
	// Redis (the entry's age comes from its remaining TTL there). Default:
	// nil (off). Production and Secure set &SWR{}.
	SWR *SWR

	// Invalidation keeps L1 coherent with writes by anyone (Redis CLIENT
	// TRACKING, else a pub/sub fallback); see Invalidation. It needs Redis
	// and L1 (without L1 it only announces writes). Default: nil (off:
	// other processes' writes reach this L1 only when the entry's TTL
	// ends). Production and Secure set &Invalidation{}.
	Invalidation *Invalidation

	// DisableAutoPipeline turns auto-pipelining off. On (the default), the
	// Client's single-key Redis commands go through go-redis's AutoPipeliner,
	// the given client's or the opened one's: one ordered stream of
	// pipelines shared by every caller (l2.Store.AutoPipeline lists what
	// goes on it); on a cluster client, one stream per master, over the
	// master's own node client. A caller's deadline ends its wait, not its
	// command: a write abandoned at its deadline may still execute, never
	// after a later write of this Client (its connection is fenced: see
	// ErrOutcomeUnknown). Values over 128 KiB, and a caller alone on the
	// Client (or on a master), go directly. Hooks (redisotel) see a
	// pipelined command on the stream's background context, not under the
	// operation's span. Default: false.
	DisableAutoPipeline bool

	// MeterProvider receives the Client's OpenTelemetry metrics (see
	// docs/production.md for the instruments). cachekit.operations counts
	// every operation exactly, in in-process counters read at collection
	// (the Clients on one provider add up); the latency histogram is
	// sampled (L2DurationSample). Default: nil (no metrics are recorded at
	// all, and the hot path pays nothing).
	MeterProvider metric.MeterProvider

	// L2DurationSample is how many of the operations Redis answered (a
	// hit, a miss, ok, not_stored, negative_hit) share one record in
	// cachekit.operation.duration: the first, then every
	// L2DurationSample-th of each attribute combination's counter cell is
	// timed and recorded. 1 records every one. Operations that failed or
	// were degraded, ran a loader or reached no tier are always recorded;
	// cachekit.operations counts every operation whatever this is. The
	// OpenTelemetry SDK's Record costs about 0.4 µs (v1.47, 2-core VM):
	// recording every Redis round trip took about 10% of the throughput at
	// 128 callers (docs/production.md, "Metrics"). Default: 0, which
	// means 8.
	L2DurationSample int

	// TracerProvider receives one OpenTelemetry span per public operation
	// (cachekit.Get, cachekit.Set, cachekit.GetOrLoad, cachekit.MGet, ...)
	// with the tier that answered, hit or miss, the value's size and the
	// key's digest (KeyDigest; never the key or the value), events for
	// entries that failed to open, breaker refusals, SWR refreshes and
	// lock waits, and a cachekit.load child span around each loader run.
	// The operation's ctx carries its span, so spans of an injected
	// go-redis client's tracing hook (redisotel) nest under it. An
	// operation whose ctx carries a valid parent span that is neither
	// sampled nor recording starts no span (see
	// SpansUnderUnsampledParents); a root call (no span in ctx) starts one
	// and the provider's sampler decides. Default: nil (no spans, and the
	// hot path pays one nil check).
	TracerProvider trace.TracerProvider

	// SpansUnderUnsampledParents starts a span for every operation, even
	// when ctx carries a valid parent span that is neither sampled nor
	// recording. The Client assumes the TracerProvider samples as the
	// SDK's default sampler, ParentBased, does: the child of an unsampled
	// parent is not sampled, so it skips Start (which would cost two
	// allocations for a span nobody sees) and hands ctx on with the
	// parent's span. Set it when the sampler may sample such a child (a
	// sampler that is not ParentBased, or ParentBased with
	// WithLocalParentNotSampled or WithRemoteParentNotSampled other than
	// NeverSample). Default: false.
	SpansUnderUnsampledParents bool
}

// defaultMaxValueBytes is used when Options.MaxValueBytes is zero.
const defaultMaxValueBytes = 64 << 20

// defaultLoadTimeout is used when Options.LoadTimeout is zero.
const defaultLoadTimeout = 30 * time.Second

// defaultTTL is used when Options.DefaultTTL is zero.
const defaultTTL = 600 * time.Second

// defaultL1Bytes is the L1 capacity every preset sets.
const defaultL1Bytes = 64 << 20

// Minimal returns the minimal preset: L1 on (64 MiB), default TTL 300 s,
// no encryption, no reliability stack, SWR or invalidation. Point it at
// Redis with RedisURL or Redis, or leave both empty for an in-process
// cache. When Redis is unreachable the first error is returned to the
// caller.
func Minimal() Options {
	return Options{L1MaxBytes: defaultL1Bytes, DefaultTTL: 300 * time.Second, Preset: PresetMinimal}
}

// Production returns the production preset: L1 on (64 MiB), default TTL
// 600 s, compression on, no encryption, the reliability stack on with
// FailOpen (an unreachable Redis makes reads misses, so GetOrLoad runs the
// loader uncached, and absorbs writes), SWR and L1 invalidation (CLIENT
// TRACKING) on.
func Production() Options {
	return Options{
		L1MaxBytes:        defaultL1Bytes,
		DefaultTTL:        600 * time.Second,
		Reliability:       &Reliability{FailOpen: true},
		SWR:               &SWR{},
		Invalidation:      &Invalidation{},
		FleetSingleFlight: true,
		Preset:            PresetProduction,
	}
}

// Secure returns the secure preset: L1 on (64 MiB, ciphertext only),
// default TTL 600 s, encryption required, tenant "default". masterKeyHex is
// the 64-hex-digit master key. When it is "", the keyring comes from the
// environment: the current key from CACHEKIT_MASTER_KEY and the
// decrypt-only previous keys from CACHEKIT_PREVIOUS_MASTER_KEYS (so a
// rotation rolls out by environment alone); when CACHEKIT_MASTER_KEY is
// unset too Secure fails: it never falls back to plaintext. A malformed key
// in either place is an error matching ErrConfig. The reliability stack is
// on but fails closed: when Redis is unreachable (after retries, or with
// the breaker open) the *BackendError reaches the caller. SWR and
// invalidation are on. When CACHEKIT_NAME_KEY is set (64 hex digits),
// with or without masterKeyHex, it becomes Encryption.NameKey: key names
// are stored opaque (see encryption.Config.NameKey); a malformed one is an
// error matching ErrConfig.
func Secure(masterKeyHex string) (Options, error) {
	fromEnv := masterKeyHex == ""
	if fromEnv {
		masterKeyHex = os.Getenv(MasterKeyEnv)
	}
	if masterKeyHex == "" {
		return Options{}, configErr("secure preset needs a master key (argument or " + MasterKeyEnv + ")")
	}
	key, err := encryption.ParseMasterKeyHex(masterKeyHex)
	if err != nil {
		what := "master key"
		if fromEnv {
			what = MasterKeyEnv
		}
		return Options{}, configErrFrom(what, err)
	}
	enc := &encryption.Config{MasterKey: key}
	if fromEnv {
		if enc.PreviousKeys, err = encryption.ParseMasterKeyListHex(os.Getenv(PreviousMasterKeysEnv)); err != nil {
			clear(key)
			return Options{}, configErrFrom(PreviousMasterKeysEnv, err)
		}
	}
	if h := os.Getenv(NameKeyEnv); h != "" {
		if enc.NameKey, err = encryption.ParseNameKeyHex(h); err != nil {
			clear(key)
			for _, k := range enc.PreviousKeys {
				clear(k)
			}
			return Options{}, configErrFrom(NameKeyEnv, err)
		}
	}
	return Options{
		L1MaxBytes:        defaultL1Bytes,
		DefaultTTL:        600 * time.Second,
		Encryption:        enc,
		RequireEncryption: true,
		Reliability:       &Reliability{},
		SWR:               &SWR{},
		Invalidation:      &Invalidation{},
		FleetSingleFlight: true,
		Preset:            PresetSecure,
	}, nil
}

func (o *Options) validate() error {
	switch {
	case o.L1MaxBytes < 0:
		return configErr("L1MaxBytes is negative")
	case o.L1TTLJitter < 0 || o.L1TTLJitter > 0.5:
		return configErr("L1TTLJitter must be within [0, 0.5]")
	case o.DefaultTTL < 0:
		return configErr("DefaultTTL is negative")
	case o.LeaseTTL < 0:
		return configErr("LeaseTTL is negative")
	case o.LoadTimeout < 0:
		return configErr("LoadTimeout is negative")
	case o.NegativeTTL < 0 || o.NegativeTTL > MaxNegativeTTL:
		return configErr("NegativeTTL must be within [0, MaxNegativeTTL (1h)]")
	case o.Interop && o.NegativeTTL != 0:
		return configErr("interop mode refuses NegativeTTL: the protocol has no negative entry the other SDKs would know")
	case o.LargeValueConcurrency < 0:
		return configErr("LargeValueConcurrency is negative (UnboundedLargeValues removes the bound)")
	case o.UnboundedLargeValues && o.LargeValueConcurrency != 0:
		return configErr("UnboundedLargeValues with a LargeValueConcurrency")
	case o.L2DurationSample < 0:
		return configErr("L2DurationSample is negative")
	case o.MaxValueBytes < 0 || o.MaxValueBytes > protocol.MaxEnvelopeOriginalSize:
		return configErr("MaxValueBytes must be within [0, 512 MiB]")
	case o.RequireEncryption && o.Encryption == nil:
		return configErr("encryption is required (secure preset) but Options.Encryption is nil")
	case o.Interop && o.KeyPrefix != "":
		return configErr("interop mode refuses a key prefix")
	case o.Interop && o.Encryption != nil && (o.Encryption.NameKey != nil || o.Encryption.NameKeyFromProvider):
		return configErr("interop mode refuses a name key: interop keys are shared with the other SDKs by design")
	case o.StructTag != "" && o.StructTag != "json":
		return configErr(`StructTag must be "" or "json"`)
	case o.Redis == nil && o.RedisURL == "" && o.L1MaxBytes == 0:
		return configErr("no storage: set Redis, RedisURL or L1MaxBytes")
	case o.Preset == PresetSecure && o.Encryption == nil:
		return configErr("the secure preset needs Options.Encryption")
	case o.Redis == nil && o.RedisURL == "" && o.SWR != nil:
		return configErr("SWR needs Redis (set Redis or RedisURL, or SWR to nil)")
	case o.Redis == nil && o.RedisURL == "" && o.Invalidation != nil:
		return configErr("Invalidation needs Redis (set Redis or RedisURL, or Invalidation to nil)")
	case o.Invalidation != nil && strings.ContainsAny(o.Invalidation.Channel, "\r\n"):
		return configErr("Invalidation.Channel contains a line break")
	case o.Invalidation != nil && o.Invalidation.FallbackL1Lifetime < 0:
		return configErr("Invalidation.FallbackL1Lifetime is negative")
	}
	if o.Reliability != nil {
		if err := guard.Config(*o.Reliability).Validate(); err != nil {
			return configErr("Reliability " + err.Error())
		}
	}
	if o.SWR != nil {
		if err := o.SWR.validate(); err != nil {
			return err
		}
	}
	return nil
}

// Reliability configures the protection the Client puts around Redis calls,
// and only around them: encoding, decryption and decoding are never
// retried, counted by the breaker or degraded. A zero field takes its
// default; Options.Reliability == nil turns the whole stack off.
type Reliability struct {
	// FailOpen degrades Redis failures instead of returning them: a failed
	// Get, GetBytes, AppendValue or GetOrLoad read is a *MissError (it
	// matches both ErrNotFound and *BackendError, and GetOrLoad loads); MGet
	// returns the values it did read (L1's; on a cluster, also those of the
	// nodes that answered) and a *MissError for the rest, and MGetOrLoad
	// loads the rest; a failed write (Set, MSet, a load's store) is absorbed
	// with a rate-limited warning (the value is then in neither tier).
	// Delete, Exists and TTL still return their error. Default: false (fail
	// closed: the *BackendError is returned); the production preset sets true.
	FailOpen bool

	// MaxAttempts is how many times one operation is sent when it fails
	// with a transient error (connection refused or reset, timeout, pool
	// exhausted, LOADING/TRYAGAIN/...). A write whose request may have
	// reached Redis (ErrOutcomeUnknown) is not sent again: its first
	// attempt may have landed, and a second one could land after another
	// process's write. So retries serve reads, writes that provably were
	// not sent (a refused dial, a write held behind a fence), and the
	// conditional writes whose own landing ends their condition (a lease,
	// a load's store, an SWR refresh, and SetIfAbsent of sealed bytes),
	// which cannot land twice. 1 turns retries off. Default: 3.
	MaxAttempts int

	// RetryBaseDelay is the backoff before the first retry; it doubles on
	// each further retry, with jitter (a random wait in [d/2, d]).
	// Default: 10ms.
	RetryBaseDelay time.Duration

	// RetryMaxDelay caps the backoff between retries. Default: 200ms.
	RetryMaxDelay time.Duration

	// OperationTimeout bounds one whole operation: the wait for an
	// in-flight slot, every attempt and the backoff between attempts. The
	// caller's ctx can shorten it, never lengthen it. A retry is not
	// started when the backoff would end past it. Default: 400ms.
	OperationTimeout time.Duration

	// AttemptTimeout bounds each attempt (dial, send, reply), within what is
	// left of OperationTimeout: every Redis call carries a ctx deadline, so
	// a call returns within it even when Redis hangs. A write of n bytes
	// (Set, MSet) gets n at 16 MiB/s on top of both (4 s for 64 MiB). A
	// read's first 128 KiB must arrive within AttemptTimeout; a longer
	// value is then read with its length's allowance at 16 MiB/s on top,
	// as its write had. The go-redis
	// client New opens from Options.RedisURL uses it as its dial and
	// pool-wait timeout, and with the allowance for MaxValueBytes as its
	// read and write timeouts (a backstop: the ctx deadline ends a call
	// sooner). With Options.Reliability nil, each call is one attempt
	// bounded by this default and the transfer allowance; for more time per
	// call (a loaded machine), set Reliability with a larger AttemptTimeout
	// and OperationTimeout (MaxAttempts 1 and DisableBreaker keep it a
	// single attempt). A call the Client's bounds
	// ended returns a *BackendError wrapping ErrTimeout. Default: 200ms.
	AttemptTimeout time.Duration

	// BreakerThreshold is the number of consecutive transient failures that
	// opens the circuit breaker (a TRYAGAIN reply, a cluster slot moving
	// under a multi-key command, is not one). Default: 5.
	BreakerThreshold int

	// BreakerProbeInterval is how often an open breaker PINGs Redis in the
	// background (each PING bounded by AttemptTimeout). The first answer
	// closes the breaker; so do a successful Client.Ping and tracking
	// reconnecting (Options.Invalidation). Default: 250ms.
	BreakerProbeInterval time.Duration

	// BreakerOpenFor is how long an open breaker refuses every call (with
	// ErrCircuitOpen, in well under a millisecond) before it also lets
	// callers' calls through as probes, should the background PING not
	// have closed it by then. Default: 5s.
	BreakerOpenFor time.Duration

	// BreakerHalfOpenProbes is how many probe calls a half-open breaker
	// lets through at once; the first success closes it, a failure reopens
	// it. Default: 1.
	BreakerHalfOpenProbes int

	// DisableBreaker turns the circuit breaker off (retries, backpressure
	// and degradation stay). Default: false.
	DisableBreaker bool

	// MaxInFlight bounds the Redis operations this Client runs at once.
	// Default: 256.
	MaxInFlight int

	// MaxWait bounds how long an operation waits for a free slot before it
	// fails with ErrOverloaded (never longer than ctx or OperationTimeout
	// allow). Default: 100ms.
	MaxWait time.Duration
}

// SWR configures stale-while-revalidate in GetOrLoad: an entry close to
// its expiry is returned at once and reloaded in the background, so hot keys
// do not all miss together when they expire. Entries are never served past
// their TTL. A zero field takes its default.
type SWR struct {
	// Ratio: an entry is refreshed once its remaining TTL is at most
	// Ratio × TTL × a jitter factor (TTL is the ttl GetOrLoad was called
	// with). Must be within [0, 1). Default: 0.5.
	Ratio float64

	// Jitter spreads the refresh point of each check over
	// [1-Jitter, 1+Jitter] × Ratio × TTL so a fleet does not refresh a hot
	// key in lockstep. Must be within [0, 0.5]. Default: 0.1.
	Jitter float64

	// MaxRefreshes bounds the background refreshes running at once; a due
	// entry found while all are busy is served and tried again on a later
	// read. There is never more than one refresh per key. Default: 10.
	MaxRefreshes int
}

func (w *SWR) validate() error {
	if field, why := swr.Config(*w).Invalid(); field != "" {
		return configErr("SWR." + field + " " + why)
	}
	return nil
}

// newSWR returns the SWR state for o with its defaults, nil when SWR is off.
func newSWR(o *SWR) *swr.State {
	if o == nil {
		return nil
	}
	return swr.Config(*o).NewState()
}

// DefaultInvalidationChannel is the Redis pub/sub channel Invalidation uses
// unless told otherwise.
const DefaultInvalidationChannel = "cachekit:invalidate"

// DefaultFallbackL1Lifetime is Invalidation.FallbackL1Lifetime's default.
const DefaultFallbackL1Lifetime = time.Second

// Invalidation keeps L1 coherent with Redis whoever writes it (this and
// other Clients, other SDKs, the command-line tool, redis-cli, expiry,
// eviction, FLUSHDB); docs/production.md states the bound per writer.
//
// The Client keeps a connection per Redis node (each master of a Cluster)
// in broadcasting tracking mode (CLIENT TRACKING ON BCAST PREFIX
// <KeyPrefix>, Redis 6+) and drops from L1 every key Redis reports
// written, expired or evicted (its own writes too); FLUSHDB and FLUSHALL
// clear L1. While it cannot vouch that it hears every write (a connection
// lost, or silent for about a second), L1 is cleared and bypassed.
//
// Every write of a Client (Set, MSet, Delete, SetIfAbsent/Present, Touch,
// GetOrLoad's store, SWR refreshes, Raw's Delete, DeleteMatching and Swap)
// also publishes "ck1 <source> <full Redis key>" on Channel (the key is in
// that Redis in the clear already; values never travel). Where Redis
// refuses tracking (ACL, managed service), the Client logs it once, shows
// it in InvalidationStats.Mode and the cachekit.invalidation.mode metric,
// and falls back: it subscribes to Channel and drops the keys other
// Clients announce (mode "pubsub"; losing the subscription clears L1), and
// keeps no L1 copy older than FallbackL1Lifetime, the bound for writers
// that do not announce; a key read in the last quarter of its copy's
// lifetime is read from Redis again in the background (once per key at a
// time) and its copy renewed, so a hot key stays in L1. Where SUBSCRIBE is
// refused too, that lifetime is the only bound (mode "lifetime"). It tries
// tracking again every 30 s.
type Invalidation struct {
	// Channel is the pub/sub channel writes are announced on and the
	// fallback listens to; Clients sharing keys must agree on it.
	// Default: DefaultInvalidationChannel.
	Channel string

	// FallbackL1Lifetime bounds an L1 entry's life while Redis refuses
	// tracking. Default: 0, which New treats as DefaultFallbackL1Lifetime.
	FallbackL1Lifetime time.Duration

	// RequireTracking forbids the fallback: a refusal within New's wait
	// (about a second) makes New fail with an error matching ErrConfig.
	// When Redis is unreachable at New, New returns the Client as usual; a
	// refusal first seen later is logged at error level, and L1 stays
	// cleared and bypassed until Redis allows tracking. Default: false.
	RequireTracking bool

	// NoAnnounce stops the announcements, saving a PUBLISH per write: set
	// it only when every Client sharing the keys tracks. Refused tracking
	// then leaves FallbackL1Lifetime alone (mode "lifetime"): no peer
	// announces. Default: false.
	NoAnnounce bool
}

// newInvalidator returns the invalidation state of o, with its defaults.
func newInvalidator(o *Invalidation) *coherence.State {
	return coherence.New(cmp.Or(o.Channel, DefaultInvalidationChannel), !o.NoAnnounce,
		cmp.Or(o.FallbackL1Lifetime, DefaultFallbackL1Lifetime), o.RequireTracking)
}

// defaultLeaseTTL is used when Options.LeaseTTL is zero.
const defaultLeaseTTL = 5 * time.Second

// LargeValueBytes is the size from which sealing or opening a value counts
// as large work: a value whose encoded form, or an entry whose stored form,
// is at least this long. Options.LargeValueConcurrency bounds how many such
// seals and opens run at once. It is also where AES-GCM switches to sealing
// in 64 KiB chunks (about a quarter of a millisecond of work per 256 KiB on
// the dev machine).
const LargeValueBytes = 256 << 10

// maxEntryOverhead bounds what an entry adds to its value: the envelope's
// header and LZ4's fixed worst-case growth, and the AEAD's nonce and tag.
const maxEntryOverhead = 256 + encryption.Overhead
