package structdec

import (
	"testing"

	"github.com/cachekit-io/cachekit-go/internal/testenv"
)

// TestAllocDecodeRecord holds Decode of the fixture to the strings it must
// create: name, email, bio and the two tags, with Tags' capacity already
// present.
func TestAllocDecodeRecord(t *testing.T) {
	if testenv.RaceEnabled {
		t.Skip("allocation counts are not meaningful under -race")
	}
	data := encodeCompact(t, sampleRecord())
	dst := Record{Tags: make([]string, 0, 4)}
	if !Decode(data, &dst) {
		t.Fatal("Decode reported false")
	}
	const budget = 5
	got := testing.AllocsPerRun(200, func() {
		if !Decode(data, &dst) {
			t.Fatal("Decode reported false")
		}
	})
	if got > budget {
		t.Fatalf("Decode of the fixture: %v allocations, budget %d", got, budget)
	}
}
