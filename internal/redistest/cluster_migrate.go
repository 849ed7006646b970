package redistest

import (
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"
)

// Slot migration in the steps redis-cli --cluster reshard takes, so that a
// test can act while a slot is half moved:
//
//	cl.BeginMigrate(t, slot, from, to)
//	cl.MigrateKeys(t, slot, from, to, 1) // one key moved: it is answered with -ASK
//	... read through a ClusterClient ...
//	for cl.MigrateKeys(t, slot, from, to, 100) > 0 {
//	}
//	cl.FinishMigrate(t, slot, from, to) // the slot is answered with -MOVED on from

// migrateTimeout is MIGRATE's timeout in milliseconds.
const migrateTimeout = "5000"

// BeginMigrate marks slot as importing on toAddr and then as migrating on
// fromAddr (CLUSTER SETSLOT). From then on fromAddr answers a command for
// a key of slot it no longer holds with -ASK toAddr.
func (c *Cluster) BeginMigrate(tb testing.TB, slot int, fromAddr, toAddr string) {
	tb.Helper()
	s := strconv.Itoa(slot)
	mustOK(tb, toAddr, "CLUSTER", "SETSLOT", s, "IMPORTING", c.id(tb, fromAddr))
	mustOK(tb, fromAddr, "CLUSTER", "SETSLOT", s, "MIGRATING", c.id(tb, toAddr))
}

// MigrateKeys moves at most batch keys of slot from fromAddr to toAddr in
// one MIGRATE and returns how many keys it handed to MIGRATE (a key that
// expires meanwhile is counted but not moved). It returns 0 once fromAddr
// holds no key of slot. BeginMigrate must have been called.
func (c *Cluster) MigrateKeys(tb testing.TB, slot int, fromAddr, toAddr string, batch int) (moved int) {
	tb.Helper()
	v, err := doValue(fromAddr, "CLUSTER", "GETKEYSINSLOT", strconv.Itoa(slot), strconv.Itoa(batch))
	keys, ok := stringsOf(v)
	if err != nil || !ok {
		tb.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", slot, fromAddr, err)
	}
	if len(keys) == 0 {
		return 0
	}
	host, port, err := net.SplitHostPort(toAddr)
	if err != nil {
		tb.Fatalf("redistest: %v", err)
	}
	args := append([]string{"MIGRATE", host, port, "", "0", migrateTimeout, "KEYS"}, keys...)
	if r, err := Do(fromAddr, args...); err != nil || (r != "+OK" && r != "+NOKEY") {
		tb.Fatalf("redistest: MIGRATE of %d keys of slot %d from %s to %s: %q, %v", len(keys), slot, fromAddr, toAddr, r, err)
	}
	return len(keys)
}

// FinishMigrate assigns slot to toAddr (CLUSTER SETSLOT slot NODE) on
// toAddr, then on fromAddr, then on every other live master, and waits
// until every live node's CLUSTER SLOTS names toAddr as the slot's master.
// fromAddr must hold no key of slot any more (MigrateKeys returned 0).
func (c *Cluster) FinishMigrate(tb testing.TB, slot int, fromAddr, toAddr string) {
	tb.Helper()
	s, id := strconv.Itoa(slot), c.id(tb, toAddr)
	mustOK(tb, toAddr, "CLUSTER", "SETSLOT", s, "NODE", id)
	mustOK(tb, fromAddr, "CLUSTER", "SETSLOT", s, "NODE", id)
	for _, n := range c.Nodes {
		if a := n.Addr(); a != fromAddr && a != toAddr && n.live() && isMaster(a) {
			mustOK(tb, a, "CLUSTER", "SETSLOT", s, "NODE", id)
		}
	}
	waitFor(tb, 10*time.Second, fmt.Sprintf("every node to see slot %d on %s", slot, toAddr), func() bool {
		for _, n := range c.Nodes {
			if n.live() {
				if m, ok := slotOwner(n.Addr(), slot); !ok || m != toAddr {
					return false
				}
			}
		}
		return true
	})
}

// MigrateSlot moves slot and all its keys from fromAddr to toAddr:
// BeginMigrate, MigrateKeys in batches of 100 until none is left, then
// FinishMigrate.
func (c *Cluster) MigrateSlot(tb testing.TB, slot int, fromAddr, toAddr string) {
	tb.Helper()
	c.BeginMigrate(tb, slot, fromAddr, toAddr)
	for c.MigrateKeys(tb, slot, fromAddr, toAddr, 100) > 0 {
	}
	c.FinishMigrate(tb, slot, fromAddr, toAddr)
}
