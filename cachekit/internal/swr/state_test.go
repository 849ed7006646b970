package swr

import (
	"strconv"
	"testing"
	"time"
)

// TestClaimDue: a key is due once its remaining time is within ratio × TTL
// (no jitter here), never after it expired, once at a time, and not while
// every slot is busy (counted as skipped); a failed refresh delays the
// next by RetryAfter.
func TestClaimDue(t *testing.T) {
	w := New(0.5, 0, 1)
	now := time.Unix(1000, 0)
	w.Record("k", now, 10*time.Second, 10*time.Second)
	if w.Claim("k", now, 10*time.Second) {
		t.Fatal("claimed with all of its TTL left")
	}
	at := now.Add(6 * time.Second) // 4 s left of 10: due
	if !w.Claim("k", at, 10*time.Second) {
		t.Fatal("not due with 40% of its TTL left")
	}
	if w.Claim("k", at, 10*time.Second) {
		t.Fatal("a second refresh of the same key")
	}
	w.Record("j", now, 10*time.Second, 10*time.Second)
	if w.Claim("j", at, 10*time.Second) || w.Stats().Skipped != 1 {
		t.Fatalf("claimed with every slot busy (stats %+v)", w.Stats())
	}
	w.Done("k", at, true)
	if w.Claim("k", at.Add(RetryAfter/2), 10*time.Second) {
		t.Fatal("refreshed again within RetryAfter of a failure")
	}
	if !w.Claim("k", at.Add(RetryAfter), 10*time.Second) {
		t.Fatal("not due after RetryAfter")
	}
	w.Done("k", at, false)
	if w.Claim("k", now.Add(11*time.Second), 10*time.Second) {
		t.Fatal("claimed an expired key")
	}
	if st := w.Stats(); st.Started != 2 || st.Failed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// TestRewrittenObserveForget: a plain write moves a tracked key's expiry
// (and clears its failure delay) but does not start tracking; Observe keeps
// the TTL learned at store time; Forget and ForgetAll drop keys.
func TestRewrittenObserveForget(t *testing.T) {
	w := New(0.5, 0, 4)
	now := time.Unix(1000, 0)
	w.Rewritten("new", now, time.Second)
	if w.Claim("new", now.Add(900*time.Millisecond), time.Second) {
		t.Fatal("a plain write started tracking a key")
	}
	w.Record("k", now, 10*time.Second, 10*time.Second)
	w.Rewritten("k", now.Add(5*time.Second), 10*time.Second) // expires at 15 s now
	if w.Claim("k", now.Add(9*time.Second), 10*time.Second) {
		t.Fatal("due by the expiry the write replaced")
	}
	// Read back with a call TTL of 1 s: the stored 10 s TTL still rules.
	w.Observe("k", now.Add(9*time.Second), 6*time.Second, time.Second)
	if !w.Claim("k", now.Add(10*time.Second), time.Second) {
		t.Fatal("Observe lost the TTL the key was stored with")
	}
	w.Done("k", now, false)
	w.Forget("k")
	w.Record("j", now, 10*time.Second, 10*time.Second)
	w.ForgetAll()
	if w.Claim("k", now.Add(14*time.Second), time.Second) || w.Claim("j", now.Add(9*time.Second), time.Second) {
		t.Fatal("claimed a forgotten key")
	}
}

// TestTrackedBound: past MaxTracked live keys a new key is not tracked;
// expired ones make room.
func TestTrackedBound(t *testing.T) {
	w := New(0.5, 0, 1)
	now := time.Unix(1000, 0)
	for i := range MaxTracked {
		w.Record(strconv.Itoa(i), now, time.Second, time.Second)
	}
	w.Record("extra", now, time.Minute, time.Minute)
	if len(w.meta) != MaxTracked {
		t.Fatalf("%d keys tracked; want %d", len(w.meta), MaxTracked)
	}
	later := now.Add(2 * time.Second)
	w.Record("extra", later, time.Minute, time.Minute)
	if _, ok := w.meta["extra"]; !ok || len(w.meta) != 1 {
		t.Fatalf("expired keys not dropped: %d tracked", len(w.meta))
	}
}

// TestGoAfterWait: once Wait was called Go starts nothing (a refresh could
// otherwise begin while Close waits, or after it).
func TestGoAfterWait(t *testing.T) {
	w := New(0.5, 0, 1)
	ran := make(chan struct{}, 1)
	if !w.Go(func() { ran <- struct{}{} }) {
		t.Fatal("Go before Wait started nothing")
	}
	w.Wait()
	<-ran
	if w.Go(func() { t.Error("a refresh ran after Wait") }) {
		t.Fatal("Go after Wait reported a start")
	}
}

// TestConfigInvalidAndDefaults: each field out of its range is named, and
// a zero field takes its documented default.
func TestConfigInvalidAndDefaults(t *testing.T) {
	for _, c := range []Config{{Ratio: 1}, {Ratio: -0.1}, {Jitter: 0.6}, {Jitter: -1}, {MaxRefreshes: -1}} {
		if field, _ := c.Invalid(); field == "" {
			t.Errorf("%+v validated", c)
		}
	}
	if field, why := (Config{Ratio: 0.99, Jitter: 0.5}).Invalid(); field != "" {
		t.Fatal(field, why)
	}
	w := Config{}.NewState()
	if w.ratio != 0.5 || w.jitter != 0.1 || cap(w.slots) != 10 {
		t.Fatalf("defaults: ratio %v jitter %v slots %d; want 0.5, 0.1, 10", w.ratio, w.jitter, cap(w.slots))
	}
	if w := (Config{Ratio: 0.25, Jitter: 0.2, MaxRefreshes: 3}).NewState(); w.ratio != 0.25 || w.jitter != 0.2 || cap(w.slots) != 3 {
		t.Fatalf("set fields not kept: %v %v %d", w.ratio, w.jitter, cap(w.slots))
	}
}
