package pairs

import (
	"slices"
	"testing"
)

// TestGroupsPutRowsNextToTheirReference: with the rows in go test's order
// (ours, then the floor's, then the peer's), every row compared with a
// targeted reference lands in that reference's block, and the rest stay
// alone and in order.
func TestGroupsPutRowsNextToTheirReference(t *testing.T) {
	rows := []string{
		Cachekit + "L1Hit/encrypted/bytes/100B",
		Cachekit + "L1Hit/plain/bytes/100B",
		Cachekit + "L2Get/encrypted/bytes/1KiB",
		Cachekit + "Set/encrypted/bytes/1KiB",
		Cachekit + "SetL2Only/encrypted/bytes/1KiB",
		Cachekit + "MGet100/encrypted/bytes/100B",
		Cachekit + "GetSeq100/encrypted/bytes/100B",
		Cachekit + "L2GetParallel/encrypted/bytes/1KiB",
		Floor + "OpenRaw/100B",
		Floor + "GoRedisGet/1KiB",
		Floor + "GoRedisSet/1KiB",
		Floor + "GoRedisSetAfterBusy2us/1KiB",
		Peer + "LocalHit/bytes/100B",
		Peer + "Set/bytes/1KiB",
	}
	want := [][]string{
		{Cachekit + "L1Hit/encrypted/bytes/100B", Cachekit + "L1Hit/plain/bytes/100B", Peer + "LocalHit/bytes/100B"},
		{Cachekit + "L2Get/encrypted/bytes/1KiB", Floor + "GoRedisGet/1KiB"},
		{Cachekit + "Set/encrypted/bytes/1KiB", Cachekit + "SetL2Only/encrypted/bytes/1KiB", Floor + "GoRedisSet/1KiB", Floor + "GoRedisSetAfterBusy2us/1KiB"},
		{Cachekit + "MGet100/encrypted/bytes/100B", Cachekit + "GetSeq100/encrypted/bytes/100B"},
		{Cachekit + "L2GetParallel/encrypted/bytes/1KiB"},
		{Floor + "OpenRaw/100B"},
		{Peer + "Set/bytes/1KiB"},
	}
	got := Groups(rows)
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("Groups:\n got  %q\n want %q", got, want)
	}
}

// TestGroupsWithoutTheReference: a targeted pair whose reference is not
// run forms no block.
func TestGroupsWithoutTheReference(t *testing.T) {
	rows := []string{Cachekit + "Set/encrypted/bytes/1KiB", Cachekit + "SetL2Only/encrypted/bytes/1KiB"}
	got := Groups(rows)
	if len(got) != 2 {
		t.Fatalf("Groups = %q, want each row alone", got)
	}
}
