package observe

import (
	"sync/atomic"

	"github.com/cachekit-io/cachekit-go/internal/stripe"
)

// Counters are the counts behind the owner's Stats, bumped where the
// operation learns them (the L1-hit path among them, so each is one
// atomic add, or one striped add for the hits every core bumps). Unlike
// the instruments they are always on: a Client without providers keeps
// them too. The zero Counters is ready to use.
type Counters struct {
	L1Hits                                 stripe.Counter // every L1 hit, from every core
	L1Misses, L1Rejected, L1OpenFail       atomic.Uint64
	L2Hits, L2Misses, L2Errors, L2OpenFail atomic.Uint64
	Loads, LoadErrors                      atomic.Uint64
	LeaseWaits, LeasesLost                 atomic.Uint64
	NegativeHits                           atomic.Uint64
	Degraded, UnknownWrites                atomic.Uint64
	NameKeyMismatches                      atomic.Uint64
}

// OpenFailures is the counter of entries of tier that failed to open.
func (s *Counters) OpenFailures(t Tier) *atomic.Uint64 {
	if t == L1 {
		return &s.L1OpenFail
	}
	return &s.L2OpenFail
}
