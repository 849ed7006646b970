package structdec

import (
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

// TestAllocDecodeRecord holds Decode of the fixture to one allocation: the
// block its strings (name, email, bio and the two tags) share, with Tags'
// capacity already present.
func TestAllocDecodeRecord(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	data := encodeCompact(t, sampleRecord())
	dst := Record{Tags: make([]string, 0, 4)}
	if !Decode(data, &dst) {
		t.Fatal("Decode reported false")
	}
	const budget = 1
	got := testing.AllocsPerRun(200, func() {
		if !Decode(data, &dst) {
			t.Fatal("Decode reported false")
		}
	})
	if got > budget {
		t.Fatalf("Decode of the fixture: %v allocations, budget %d", got, budget)
	}
}

// TestAllocDecodeMember holds Decode of the realistic fixture to its
// strings' one block when the destination is reused (its pointees, maps
// and slices are then reused, as msgpack reuses them), and to what a fresh
// value owns otherwise: that block, the two pointees, the two maps (two
// allocations each, as measured) and the two slices.
func TestAllocDecodeMember(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	data := encodeCompact(t, newMember())
	var dst Member
	if !Decode(data, &dst) {
		t.Fatal("Decode reported false")
	}
	for _, c := range []struct {
		name   string
		budget float64
		reset  func()
	}{
		{"reused", 1, func() {}},
		{"fresh", 9, func() { dst = Member{} }},
	} {
		got := testing.AllocsPerRun(200, func() {
			c.reset()
			if !Decode(data, &dst) {
				t.Fatal("Decode reported false")
			}
		})
		t.Logf("%s: %v allocations", c.name, got)
		if got > c.budget {
			t.Errorf("Decode of Member into a %s destination: %v allocations, budget %v", c.name, got, c.budget)
		}
	}
}
