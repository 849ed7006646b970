package l1

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRemaining: Remaining reports the time an entry has left on the
// injected clock, and false for a missing or expired key.
func TestRemaining(t *testing.T) {
	now := time.Unix(1000, 0)
	c, err := New(Config{MaxBytes: 1 << 20, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.Remaining("k"); ok {
		t.Fatal("Remaining of a missing key reported true")
	}
	if !c.Set("k", []byte("v"), 10*time.Second) {
		t.Fatal("Set rejected")
	}
	now = now.Add(4 * time.Second)
	if left, ok := c.Remaining("k"); !ok || left > 6*time.Second || left < 5*time.Second {
		t.Fatalf("Remaining = %v, %v; want about 6s", left, ok)
	}
	now = now.Add(7 * time.Second)
	if _, ok := c.Remaining("k"); ok {
		t.Fatal("Remaining of an expired entry reported true")
	}
}

// TestSetIfPresenceOneWinner: of concurrent SetIfPresence(absent) calls on
// one key exactly one stores, every round; SetIfPresence(present) stores
// only over an entry.
func TestSetIfPresenceOneWinner(t *testing.T) {
	c, err := New(Config{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.SetIfPresence("p", []byte("x"), time.Minute, true) {
		t.Fatal("SetIfPresence(present) stored over no entry")
	}
	for round := range 50 {
		key := fmt.Sprintf("k%d", round)
		var wins atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				if c.SetIfPresence(key, []byte("v"), time.Minute, false) {
					wins.Add(1)
				}
			})
		}
		wg.Wait()
		if wins.Load() != 1 {
			t.Fatalf("round %d: %d concurrent SetIfPresence(absent) stored, want 1", round, wins.Load())
		}
		if !c.SetIfPresence(key, []byte("w"), time.Minute, true) {
			t.Fatalf("round %d: SetIfPresence(present) did not store over the entry", round)
		}
	}
}

// TestExtendKeepsTheLatestValue: Extend re-stores the value the cache
// holds now, with the new TTL, and refuses a stale token.
func TestExtendKeepsTheLatestValue(t *testing.T) {
	now := time.Unix(1000, 0)
	c, err := New(Config{MaxBytes: 1 << 20, Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Set("k", []byte("old"), time.Second)
	v := c.Version("k")
	c.Set("k", []byte("new"), time.Second)
	if c.Extend("k", time.Hour, v) {
		t.Fatal("Extend with a token older than the last Set stored")
	}
	if !c.Extend("k", time.Hour, c.Version("k")) {
		t.Fatal("Extend with the current token failed")
	}
	now = now.Add(time.Minute)
	if b, ok := c.Get("k"); !ok || string(b) != "new" {
		t.Fatalf("after Extend and a minute: %q, %v; want new", b, ok)
	}
	if c.Extend("missing", time.Hour, c.Version("missing")) {
		t.Fatal("Extend of a missing key reported true")
	}
}

// TestAbsentValuesAreNoEntry: a value Config.Absent names is no entry to
// SetIfPresence and ExtendLatest; Get still returns it.
func TestAbsentValuesAreNoEntry(t *testing.T) {
	c, err := New(Config{MaxBytes: 1 << 20, Absent: func(v []byte) bool { return string(v) == "none" }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Set("k", []byte("none"), time.Minute)
	if c.ExtendLatest("k", time.Hour) {
		t.Fatal("ExtendLatest extended an absent value")
	}
	if c.SetIfPresence("k", []byte("v"), time.Minute, true) {
		t.Fatal("SetIfPresence(present) stored over an absent value")
	}
	if v, ok := c.Get("k"); !ok || string(v) != "none" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	if !c.SetIfPresence("k", []byte("v"), time.Minute, false) {
		t.Fatal("SetIfPresence(absent) did not store over an absent value")
	}
	if !c.ExtendLatest("k", time.Hour) {
		t.Fatal("ExtendLatest refused an entry")
	}
}
