package cachekit

import (
	"github.com/cachekit-io/cachekit-go/cachekit/internal/coherence"
	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
)

// Stats is a snapshot of a Client's counters since New.
type Stats struct {
	L1Hits, L1Misses uint64
	// L1Rejected counts writes (Set, MSet, loads, refreshes) whose bytes L1
	// did not keep: admission refused them (L1 full; for a key L1 did not
	// hold, the refusal may come after the write returned, as L1 serves
	// the new entry at once and decides in the background: counted here
	// when it comes, as are such late refusals of entries a Get put in
	// L1), another write, delete or invalidation of the key overlapped the
	// Redis round trip (L1 then drops the key, as Redis may hold the other
	// value), or invalidation tracking was down. The next read goes to
	// Redis.
	L1Rejected uint64
	// L1Bytes is what L1 charges for the entries it holds now, in bytes
	// of memory: their sealed bytes (see Options.L1MaxBytes) plus
	// l1.EntryOverhead each.
	L1Bytes int64
	// L1OpenFailures counts L1 entries that failed to decrypt or unwrap
	// and were evicted (the read fell through to L2).
	L1OpenFailures uint64

	L2Hits, L2Misses, L2Errors uint64
	// L2OpenFailures counts L2 entries that failed to decrypt or unwrap
	// (returned to the caller as an *EntryError).
	L2OpenFailures uint64

	// Encryptions is the number of values sealed (the nonce counter).
	Encryptions uint64
	// DecryptsByKey counts successful decryptions by keyring index:
	// [0] the current key, [1..3] previous keys (rotation drain).
	DecryptsByKey [4]uint64
	// KeyFingerprint is the hex fingerprint of the current tenant key, ""
	// without encryption or before keys are derived. It identifies the key
	// without revealing it.
	KeyFingerprint string

	// Loads counts GetOrLoad loader runs; LoadErrors the failed ones.
	Loads, LoadErrors uint64
	// LeaseWaits counts GetOrLoad misses that found another Client
	// loading the key (its lease in Redis) and waited for its result
	// (Options.FleetSingleFlight) instead of loading.
	LeaseWaits uint64
	// LeasesLost counts loads whose value was not stored because the key
	// was written (Set, Delete, another writer, expiry) while they ran:
	// the write stays, and the loaded value went only to its callers.
	LeasesLost uint64
	// NegativeHits counts reads answered by a negative entry (a cached
	// "not found", Options.NegativeTTL) of either tier: they are counted
	// neither in L1Hits and L2Hits (values) nor in the misses.
	NegativeHits uint64

	// UnknownWrites counts Redis writes whose outcome is unknown
	// (ErrOutcomeUnknown: returned, or absorbed under FailOpen).
	UnknownWrites uint64
	// Fences counts Redis connections that failed while a request may
	// have been on its way and that Redis killed, or found gone, before
	// this Client sent anything more to that server; Unfenced those that
	// could not be: a write abandoned on one may land after a later
	// write. UnfencedNoID and UnfencedRefused say why: no client ID was
	// read at the handshake (a server or proxy without HELLO), or Redis
	// answered CLIENT KILL with an error (an ACL without +client|kill, a
	// service that removed the command).
	Fences, Unfenced, UnfencedNoID, UnfencedRefused uint64
	// PreDialed is how many open connections of an injected client are
	// not watched by the fence: dialed before New and in use while New
	// retired the idle ones (or a pipeline pool's). It falls as they
	// close; New warns when it is not 0.
	PreDialed uint64
	// NameKeyMismatches counts the times this Client, writing its
	// name-key marker again after its loss, found another name key's
	// marker (see NameMarker): a fleet with two name keys, where a Delete
	// by one does not reach the other's copy.
	NameKeyMismatches uint64
}

// Stats returns the Client's counters. It works after Close.
func (c *Client) Stats() Stats {
	st := Stats{
		L1Hits:         c.stats.L1Hits.Load(),
		L1Misses:       c.stats.L1Misses.Load(),
		L1Rejected:     c.stats.L1Rejected.Load(),
		L1OpenFailures: c.stats.L1OpenFail.Load(),
		L2Hits:         c.stats.L2Hits.Load(),
		L2Misses:       c.stats.L2Misses.Load(),
		L2Errors:       c.stats.L2Errors.Load(),
		L2OpenFailures: c.stats.L2OpenFail.Load(),
		Loads:          c.stats.Loads.Load(),
		LoadErrors:     c.stats.LoadErrors.Load(),
		LeaseWaits:     c.stats.LeaseWaits.Load(),
		LeasesLost:     c.stats.LeasesLost.Load(),
		NegativeHits:   c.stats.NegativeHits.Load(),
		UnknownWrites:  c.stats.UnknownWrites.Load(),

		NameKeyMismatches: c.stats.NameKeyMismatches.Load(),
	}
	if c.l2 != nil {
		fs := c.l2.FenceStats()
		st.Fences, st.Unfenced, st.UnfencedNoID, st.UnfencedRefused = fs.Fenced, fs.Unfenced, fs.NoID, fs.Refused
		st.PreDialed = fs.PreDialed
	}
	if c.l1 != nil {
		ls := c.l1.Stats()
		st.L1Bytes = ls.CostBytes
		st.L1Rejected += ls.Refused // refusals decided after the write returned
	}
	if c.enc != nil {
		es := c.enc.Stats()
		st.Encryptions = es.Encryptions
		st.DecryptsByKey = es.DecryptsByKey
		st.KeyFingerprint = es.Fingerprint
	}
	return st
}

// ReliabilityStats is a snapshot of the reliability stack's counters.
type ReliabilityStats struct {
	// Breaker is the breaker's state now (BreakerClosed when disabled).
	Breaker BreakerState
	// BreakerOpened counts transitions to open.
	BreakerOpened uint64
	// Retries counts retried attempts; Refused counts calls the open
	// breaker refused; Shed counts calls refused by backpressure.
	Retries, Refused, Shed uint64
	// Degraded counts Redis failures absorbed by FailOpen (reads turned
	// into misses, writes absorbed).
	Degraded uint64
}

// ReliabilityStats returns the reliability stack's counters; the zero
// value when Options.Reliability was nil.
func (c *Client) ReliabilityStats() ReliabilityStats {
	if c.rel == nil {
		return ReliabilityStats{}
	}
	g := c.rel.Stats()
	return ReliabilityStats{Breaker: BreakerState(g.Breaker), BreakerOpened: g.Opened, Retries: g.Retries,
		Refused: g.Refused, Shed: g.Shed, Degraded: c.stats.Degraded.Load()}
}

// snapshot is what the observer's gauges report.
func (c *Client) snapshot() observe.Snapshot {
	var st observe.Snapshot
	if c.l1 != nil {
		ls := c.l1.Stats()
		st.HasL1, st.L1Bytes, st.L1Evictions, st.L1Rejected = true, ls.CostBytes, ls.Evictions, ls.Rejected
	}
	if c.enc != nil {
		es := c.enc.Stats()
		st.HasEncryption, st.Encryptions, st.DecryptsByKey = true, es.Encryptions, es.DecryptsByKey
	}
	if c.rel != nil {
		rs := c.ReliabilityStats()
		st.HasGuard, st.Breaker, st.Refused, st.Shed, st.Degraded = true, int(rs.Breaker), rs.Refused, rs.Shed, rs.Degraded
	}
	if c.inv != nil {
		is := c.InvalidationStats()
		st.HasInvalidation, st.Tracking, st.InvalidationMode = true, is.Tracking, int(c.inv.Heard())
		st.InvalidationLosses, st.PublishFailures, st.InvalidationRefusals = is.Losses, is.PublishFailures, is.Refusals
	}
	return st
}

// InvalidationStats is a snapshot of the invalidation counters.
type InvalidationStats struct {
	// Mode names what keeps L1 coherent now: "tracking" (every node
	// tracked: every write of every writer is heard), "pubsub" (tracking
	// refused: the writes Clients announce are heard), "lifetime"
	// (tracking and the subscription refused: the copies' bounded
	// lifetime alone), or "none" (copies not kept: starting, lost, or
	// refused without a fallback).
	Mode string
	// Tracking reports whether Mode is "tracking".
	Tracking bool
	// Received counts invalidation messages; Applied the keys under the
	// prefix they reported, dropped from L1.
	Received, Applied uint64
	// Flushes counts the times every copy had to go: FLUSHDB/FLUSHALL or
	// an unreadable message, and each loss.
	Flushes uint64
	// Losses counts the times tracking or the subscription was lost (a
	// change to "none" from another mode).
	Losses uint64
	// Refusals counts the times Redis refused tracking or the fallback's
	// SUBSCRIBE: once per mechanism until it is up again (the retries
	// every 30 s meanwhile are not counted).
	Refusals uint64
	// PublishFailures counts the announcements of this Client's writes
	// that could not be published (the writes went through).
	PublishFailures uint64
}

// InvalidationStats returns the invalidation counters; the zero value when
// Options.Invalidation was nil, and only PublishFailures without L1.
func (c *Client) InvalidationStats() InvalidationStats {
	switch {
	case c.inv == nil:
		return InvalidationStats{}
	case c.inv.Co == nil:
		return InvalidationStats{Mode: coherence.ModeNone.String(), PublishFailures: c.l2.PublishFailures()}
	}
	st := c.inv.Co.Stats()
	return InvalidationStats{Mode: st.Mode, Tracking: st.Tracking, Received: st.Received, Applied: st.Applied,
		Flushes: st.Flushes, Losses: st.Losses, Refusals: st.Refusals, PublishFailures: st.PublishFailures}
}
