package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/bench/internal/irwork"
	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/internal/fixture"
)

// Allocation budgets: deterministic, so CI asserts them exactly. A budget
// is a ceiling; lowering one is welcome, raising one needs a reason in the
// commit that does it.

func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("allocation budgets are meaningless under -race")
	}
}

func TestAllocBudgetL1HitBytes(t *testing.T) {
	skipUnderRace(t)
	for _, enc := range []bool{true, false} {
		for _, sz := range fixture.Sizes {
			t.Run(modeName(enc)+"/"+sz.Name, func(t *testing.T) {
				c := newClient(t, clientConfig{encrypted: enc, l1: true})
				want := fixture.NewBytes(sz.N)
				if err := c.SetWithTTL(bg, "k", want, time.Hour); err != nil {
					t.Fatal(err)
				}
				dst := make([]byte, 0, sz.N)
				var got []byte
				var err error
				allocs := testing.AllocsPerRun(500, func() { got, err = c.AppendValue(bg, dst[:0], "k") })
				if err != nil || !bytes.Equal(got, want) {
					t.Fatalf("AppendValue: wrong value (err %v)", err)
				}
				if allocs != 0 {
					t.Fatalf("L1 hit into a sized dst: %.1f allocs/op, budget 0", allocs)
				}
			})
		}
	}
}

// hitWithin stores want under "k" in a Client with L1 (encrypted or not)
// and fails t unless a Get of it into a reused destination reads back a
// value same accepts within budget allocations (logged as what).
func hitWithin[T any](t *testing.T, what string, encrypted bool, want T, budget int, same func(got *T) bool) {
	t.Helper()
	c := newClient(t, clientConfig{encrypted: encrypted, l1: true})
	if err := c.SetWithTTL(bg, "k", want, time.Hour); err != nil {
		t.Fatal(err)
	}
	var got T
	var err error
	allocs := testing.AllocsPerRun(500, func() { err = c.Get(bg, "k", &got) })
	if err != nil || !same(&got) {
		t.Fatalf("Get: wrong value (err %v)", err)
	}
	t.Logf("%s: %.1f allocs/op", what, allocs)
	if allocs > float64(budget) {
		t.Fatalf("%s: %.1f allocs/op, budget %d", what, allocs, budget)
	}
}

func TestAllocBudgetL1HitStruct(t *testing.T) {
	skipUnderRace(t)
	// The decoder allocates one block that the record's five strings (name,
	// email, bio and two tags) share (the tags slice of the reused dst is
	// reused, as msgpack does); the client itself must add nothing on top.
	const budget = 1
	for _, enc := range []bool{true, false} {
		t.Run(modeName(enc), func(t *testing.T) {
			want := fixture.NewRecord(100)
			hitWithin(t, "L1 struct hit", enc, want, budget, func(got *fixture.Record) bool { return got.Bio == want.Bio && got.ID == want.ID })
		})
	}
}

// TestAllocBudgetL1HitMember holds the hit of the struct with every field
// kind the fast decoder covers to issue 34's ceiling of six allocations.
// Into a reused destination (its pointees, maps and slices reused, as
// msgpack reuses them) the decoder makes one: the block its strings share.
func TestAllocBudgetL1HitMember(t *testing.T) {
	skipUnderRace(t)
	const budget = 6
	for _, sz := range fixture.Sizes {
		t.Run(sz.Name, func(t *testing.T) {
			want := fixture.NewMember(sz.N)
			hitWithin(t, "L1 member hit", true, want, budget, func(got *fixture.Member) bool {
				return got.Bio == want.Bio && got.Labels["plan"] == "pro" && got.CreatedAt.Equal(want.CreatedAt)
			})
		})
	}
}

func TestAllocBudgetGetOrLoadHit(t *testing.T) {
	skipUnderRace(t)
	const budget = 3 // measured since issue 34, when a fresh Record's five strings came to share one block (8 before)
	c := newClient(t, clientConfig{encrypted: true, l1: true})
	if err := c.SetWithTTL(bg, "k", fixture.NewRecord(100), time.Hour); err != nil {
		t.Fatal(err)
	}
	loader := func(context.Context) (fixture.Record, error) {
		t.Error("loader called on a hit")
		return fixture.Record{}, nil
	}
	var err error
	allocs := testing.AllocsPerRun(500, func() { _, err = cachekit.GetOrLoadTTL(bg, c, "k", time.Hour, loader) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("GetOrLoad hit: %.1f allocs/op", allocs)
	if allocs > budget {
		t.Fatalf("GetOrLoad hit: %.1f allocs/op, budget %d", allocs, budget)
	}
}

// The instruction-count workloads must stay within their allocation
// budgets (zero, but for the struct hit's decoded strings): an allocation
// more is a regression even before callgrind sees it.
func TestAllocBudgetIRWorkloads(t *testing.T) {
	skipUnderRace(t)
	for _, name := range irwork.Names() {
		t.Run(name, func(t *testing.T) {
			op, err := irwork.New(name, false)
			if err != nil {
				t.Fatal(err)
			}
			var opErr error
			allocs := testing.AllocsPerRun(500, func() { opErr = op() })
			if opErr != nil {
				t.Fatal(opErr)
			}
			if budget := irwork.Allocs(name); allocs != float64(budget) {
				t.Fatalf("%s: %.1f allocs/op, budget %d", name, allocs, budget)
			}
		})
	}
}

// The deliberate regression the gate demonstrates must really regress.
func TestAllocBudgetRegressionHookAllocates(t *testing.T) {
	skipUnderRace(t)
	op, err := irwork.New("DecryptNow/100B", true)
	if err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = op() }); allocs < 1 {
		t.Fatalf("regression hook allocated %.1f times per op, want >= 1", allocs)
	}
}
