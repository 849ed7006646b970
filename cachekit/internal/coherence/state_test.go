package coherence

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSetModeCapsL1: before any mode and after a loss L1 may not be
// written; tracking leaves entries unbounded; the fallbacks bound them by
// the lifetime. A nil State has heard nothing.
func TestSetModeCapsL1(t *testing.T) {
	var off *State
	if off.Heard() != ModeNone {
		t.Fatal("a nil State heard a mode")
	}
	s := New("ch", true, time.Second, false)
	if s.L1Cap() != -1 {
		t.Fatalf("cap before a mode = %d, want -1", s.L1Cap())
	}
	for _, c := range []struct {
		m   Mode
		cap int64
	}{{ModeTracking, 0}, {ModePubSub, int64(time.Second)}, {ModeLifetime, int64(time.Second)}, {ModeNone, -1}} {
		prev := s.Heard()
		if got := s.SetMode(c.m); got != prev || s.Heard() != c.m || s.L1Cap() != c.cap {
			t.Fatalf("SetMode(%v) = %v: mode %v, cap %d; want prev %v, cap %d", c.m, got, s.Heard(), s.L1Cap(), prev, c.cap)
		}
	}
}

// TestRenewOncePerKeyAndNoneAfterStop: a key's renewal does not start
// while one runs; after Stop none starts, and Stop waited for the running.
func TestRenewOncePerKeyAndNoneAfterStop(t *testing.T) {
	s := New("ch", true, time.Second, false)
	release := make(chan struct{})
	var runs atomic.Int32
	s.Renew("k", func() { runs.Add(1); <-release })
	s.Renew("k", func() { runs.Add(1) }) // busy: not started
	close(release)
	s.WaitRenewals()
	s.Renew("k", func() { runs.Add(1) }) // the first ended: starts
	s.Stop()
	s.Renew("j", func() { runs.Add(1) })
	s.WaitRenewals()
	if runs.Load() != 2 {
		t.Fatalf("%d renewals ran, want 2", runs.Load())
	}
}

// TestRefusedSaysWhatToDo: each refusal names its remedy; a required
// tracking refused is an error-level line.
func TestRefusedSaysWhatToDo(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	New("ch", true, time.Second, false).Refused(log, "tracking", errors.New("NOPERM"))
	New("ch", true, time.Second, false).Refused(log, "subscribe", errors.New("NOPERM"))
	New("ch", true, time.Second, true).Refused(log, "tracking", errors.New("NOPERM"))
	out := buf.String()
	for _, want := range []string{"level=WARN msg=\"cachekit: redis refuses CLIENT TRACKING", "ACL SETUSER", "level=ERROR", "channel=ch", "cause=NOPERM"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}
