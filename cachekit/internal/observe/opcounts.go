package observe

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/cachekit-io/cachekit-go/internal/stripe"
)

// The operation counts: cachekit.operations is an asynchronous counter.
// Each Client counts its operations in striped in-process counters, one per
// attribute combination it has seen (an L1 hit pays one atomic add, on a
// cache line few other cores write), and one callback per MeterProvider
// reports the sum over the Clients on it at each collection.

// numCombos is the number of (op, tier, outcome, class) combinations.
const numCombos = int(numOps) * int(numTiers) * int(numOutcomes) * int(numClasses)

// combo numbers an attribute combination of the operation instruments.
func combo(op Op, tier Tier, out Outcome, class Class) int {
	return ((int(op)*int(numTiers)+int(tier))*int(numOutcomes)+int(out))*int(numClasses) + int(class)
}

// comboSets are the attribute sets of the combinations, built on first use
// and shared by every Client (a set never changes).
var comboSets [numCombos]atomic.Pointer[attrOpts]

// comboSet returns the attribute set of combination i, building it once.
func comboSet(i int) *attrOpts {
	if a := comboSets[i].Load(); a != nil {
		return a
	}
	rest := i
	class := Class(rest % int(numClasses))
	rest /= int(numClasses)
	out := Outcome(rest % int(numOutcomes))
	rest /= int(numOutcomes)
	tier, op := Tier(rest%int(numTiers)), Op(rest/int(numTiers))
	kv := []attribute.KeyValue{attribute.String("op", ops[op].metric), attribute.String("tier", tierNames[tier]),
		attribute.String("outcome", outcomeNames[out])}
	if class != NoClass {
		kv = append(kv, attribute.String("error.type", classNames[class]))
	}
	a := newAttrOpts(kv...)
	if !comboSets[i].CompareAndSwap(nil, a) {
		return comboSets[i].Load()
	}
	return a
}

// opSlot counts one combination's operations in one Client.
type opSlot struct {
	n     stripe.Counter
	combo int
	set   *attrOpts
}

// opCounts are one Client's operation counts. The zero opCounts is ready
// to use.
type opCounts struct {
	slots [numCombos]atomic.Pointer[opSlot]
	mu    sync.Mutex
	seen  []*opSlot // the slots made so far, for the callback
}

// slot returns combination i's slot, making it on first use.
func (c *opCounts) slot(i int) *opSlot {
	if s := c.slots[i].Load(); s != nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.slots[i].Load(); s != nil {
		return s
	}
	s := &opSlot{combo: i, set: comboSet(i)}
	c.seen = append(c.seen, s)
	c.slots[i].Store(s)
	return s
}

// addTo adds c's counts to sum, by combination.
func (c *opCounts) addTo(sum map[int]uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.seen {
		sum[s.combo] += s.n.Load()
	}
}

// opTotals reports cachekit.operations for every Client on one
// MeterProvider: the sum of the live Clients' counts and of the final
// counts of those closed, so that a Client's Close leaves the counter
// where it was (the SDK would also add two callbacks' observations of one
// attribute set, but a closed Client's share would then leave the sum: a
// counter going back, which a backend takes for a reset).
type opTotals struct {
	inst metric.Int64ObservableCounter
	reg  metric.Registration

	mu      sync.Mutex
	clients map[*opCounts]struct{}
	retired map[int]uint64 // closed Clients' counts, by combination
	sum     map[int]uint64 // the callback's scratch
}

// providers are the opTotals of each comparable MeterProvider with a
// Client on it; one whose dynamic type is not comparable gets an opTotals
// per Client (the SDK adds their observations).
var providers struct {
	sync.Mutex
	m map[metric.MeterProvider]*opTotals
}

// joinTotals adds c to the opTotals of mp, creating the instrument on m
// and registering its callback for the first Client on mp.
func joinTotals(mp metric.MeterProvider, m metric.Meter, c *opCounts) (*opTotals, error) {
	providers.Lock()
	defer providers.Unlock()
	shared := reflect.TypeOf(mp).Comparable()
	t := (*opTotals)(nil)
	if shared {
		t = providers.m[mp]
	}
	if t == nil {
		var err error
		if t, err = newOpTotals(m); err != nil {
			return nil, err
		}
		if shared {
			if providers.m == nil {
				providers.m = map[metric.MeterProvider]*opTotals{}
			}
			providers.m[mp] = t
		}
	}
	t.mu.Lock()
	t.clients[c] = struct{}{}
	t.mu.Unlock()
	return t, nil
}

func newOpTotals(m metric.Meter) (*opTotals, error) {
	t := &opTotals{clients: map[*opCounts]struct{}{}, retired: map[int]uint64{}, sum: map[int]uint64{}}
	var err error
	if t.inst, err = m.Int64ObservableCounter("cachekit.operations", metric.WithDescription(opsDescription)); err != nil {
		return nil, err
	}
	if t.reg, err = m.RegisterCallback(t.observe, t.inst); err != nil {
		return nil, err
	}
	return t, nil
}

// opsDescription is cachekit.operations' description: what a dashboard
// gets from it.
const opsDescription = "Public operations by op, tier, outcome and error.type: exact (every operation is counted)." +
	" Read at collection from in-process counters, so it carries no exemplars;" +
	" the Clients on one MeterProvider add up, and a closed Client's counts stay in the sum"

// observe reports the sum of every Client's counts.
func (t *opTotals) observe(_ context.Context, o metric.Observer) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.sum)
	for i, n := range t.retired {
		t.sum[i] = n
	}
	for c := range t.clients {
		c.addTo(t.sum)
	}
	for i, n := range t.sum {
		o.ObserveInt64(t.inst, int64(n), comboSet(i).obs...)
	}
	return nil
}

// leave removes c from t, keeping its counts in the sum; the last Client
// to leave unregisters the callback (the provider's series then end, as a
// shut-down provider's do). Unregister waits for the SDK's lock, which a
// collection holds while it calls observe: it runs without t.mu.
func (t *opTotals) leave(mp metric.MeterProvider, c *opCounts) {
	providers.Lock()
	defer providers.Unlock()
	t.mu.Lock()
	_, ok := t.clients[c]
	if ok {
		delete(t.clients, c)
		c.addTo(t.retired)
	}
	last := ok && len(t.clients) == 0
	t.mu.Unlock()
	if !last {
		return
	}
	if providers.m[mp] == t {
		delete(providers.m, mp)
	}
	_ = t.reg.Unregister()
}
