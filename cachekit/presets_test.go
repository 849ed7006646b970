package cachekit

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/encryption"
)

// TestPresetDefaults pins what each preset sets (README, docs/presets.md
// and the presets' doc comments state these numbers).
// It pins the default TTLs (PRE-1), none never-expire (PRE-5), L1 on in minimal and
// production (PRE-7) and secure (PRE-9), SWR and invalidation off in minimal
// (PRE-8), the reliability stack on in production and secure (PRE-13).
func TestPresetDefaults(t *testing.T) {
	t.Parallel()
	secure, err := Secure(strings.Repeat("42", 32))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name                         string
		o                            Options
		ttl                          time.Duration
		failOpen, rel, swr, inv, enc bool
	}{
		{"minimal", Minimal(), 300 * time.Second, false, false, false, false, false},
		{"production", Production(), 600 * time.Second, true, true, true, true, false},
		{"secure", secure, 600 * time.Second, false, true, true, true, true},
	}
	for _, tc := range cases {
		o := tc.o
		if o.L1MaxBytes != 64<<20 || o.DefaultTTL != tc.ttl {
			t.Errorf("%s: L1 %d bytes, TTL %v; want 64 MiB, %v", tc.name, o.L1MaxBytes, o.DefaultTTL, tc.ttl)
		}
		if (o.Reliability != nil) != tc.rel || (o.Reliability != nil && o.Reliability.FailOpen != tc.failOpen) {
			t.Errorf("%s: Reliability %+v, want on=%v FailOpen=%v", tc.name, o.Reliability, tc.rel, tc.failOpen)
		}
		if (o.SWR != nil) != tc.swr || (o.Invalidation != nil) != tc.inv || (o.Encryption != nil) != tc.enc || o.RequireEncryption != tc.enc {
			t.Errorf("%s: SWR %v, Invalidation %v, Encryption %v, RequireEncryption %v", tc.name,
				o.SWR != nil, o.Invalidation != nil, o.Encryption != nil, o.RequireEncryption)
		}
		if o.Preset != Preset(tc.name) {
			t.Errorf("%s: Preset %q", tc.name, o.Preset)
		}
		// One load per fleet where invalidation can wake the waiters.
		if o.FleetSingleFlight != tc.inv || o.LeaseTTL != 0 {
			t.Errorf("%s: FleetSingleFlight %v, LeaseTTL %v", tc.name, o.FleetSingleFlight, o.LeaseTTL)
		}
	}
	if c := newClient(t, Minimal()); c.leaseTTL != defaultLeaseTTL || defaultLeaseTTL != 5*time.Second {
		t.Errorf("LeaseTTL 0 becomes %v, want the documented 5 s", c.leaseTTL)
	}
}

// TestNewDoesNotModifyOptions: New reads Options (and everything they point
// to) and writes nothing back, whatever defaults it fills in.
func TestNewDoesNotModifyOptions(t *testing.T) {
	t.Parallel()
	_, rdb := withRedis(t)
	key := bytes.Repeat([]byte{9}, 32)
	o := Production()
	o.Redis = rdb
	o.Encryption = &encryption.Config{MasterKey: key}
	o.Reliability = &Reliability{FailOpen: true}
	before := deepOptions(o)
	newClient(t, o)
	if after := deepOptions(o); !reflect.DeepEqual(before, after) {
		t.Fatalf("New modified its Options:\nbefore %+v\nafter  %+v", before, after)
	}
	if !bytes.Equal(o.Encryption.MasterKey, bytes.Repeat([]byte{9}, 32)) {
		t.Fatal("New changed the caller's master key bytes")
	}
}

// deepOptions copies o and what its pointers reach, for comparison.
func deepOptions(o Options) []any {
	out := []any{o.L1MaxBytes, o.DefaultTTL, o.LeaseTTL, o.FleetSingleFlight, o.LoadTimeout, o.KeyPrefix, o.Preset, o.RequireEncryption}
	if o.Reliability != nil {
		out = append(out, *o.Reliability)
	}
	if o.SWR != nil {
		out = append(out, *o.SWR)
	}
	if o.Invalidation != nil {
		out = append(out, *o.Invalidation)
	}
	if o.Encryption != nil {
		e := *o.Encryption
		out = append(out, bytes.Clone(e.MasterKey), e.Tenant, len(e.PreviousKeys))
	}
	return out
}
