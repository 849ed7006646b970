// Package pairs is the table of benchmark rows compared as ratios: ours
// over a floor or a peer, some with the target. cmd/benchratio
// prints it; cmd/benchrounds orders each round by it, running every row
// measured against the same reference next to that reference.
package pairs

// Pair is one row of the ratio table: Ours ÷ Ref, with an optional Target
// (0: informational). For AtLeast targets the ratio is Ref ÷ Ours.
type Pair struct {
	Ours, Ref string
	Target    float64
	AtLeast   bool
	Note      string
}

// Name prefixes of the rows: ours, the floor's and the peer's.
const (
	Cachekit = "BenchmarkCachekit/"
	Floor    = "BenchmarkFloor/"
	Peer     = "BenchmarkPeer/GoRedisCache/"
)

// All is the ratio table, in the order it is printed.
var All = []Pair{
	{Ours: Cachekit + "L1Hit/encrypted/struct/100B", Ref: Peer + "LocalHit/struct/100B", Target: 1.0, Note: "ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/encrypted/struct/1KiB", Ref: Peer + "LocalHit/struct/1KiB", Target: 1.0, Note: "ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/encrypted/profile/256B", Ref: Peer + "LocalHit/profile/256B", Target: 1.0, Note: "realistic struct; ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/encrypted/profile/1KiB", Ref: Peer + "LocalHit/profile/1KiB", Target: 1.0, Note: "realistic struct; ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/encrypted/bytes/100B", Ref: Peer + "LocalHit/bytes/100B", Target: 1.6, Note: "ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/encrypted/bytes/1KiB", Ref: Peer + "LocalHit/bytes/1KiB", Note: "ours encrypted vs peer unencrypted"},
	{Ours: Cachekit + "L1Hit/plain/struct/100B", Ref: Peer + "LocalHit/struct/100B", Note: "both unencrypted"},
	{Ours: Cachekit + "L1Hit/plain/bytes/100B", Ref: Peer + "LocalHit/bytes/100B", Note: "both unencrypted"},
	{Ours: Cachekit + "L2Get/encrypted/bytes/1KiB", Ref: Floor + "GoRedisGet/1KiB", Target: 1.05, Note: "raw GET of the same stored bytes"},
	{Ours: Cachekit + "Set/encrypted/bytes/1KiB", Ref: Floor + "GoRedisSet/1KiB", Target: 1.05, Note: "raw SET of the same stored bytes"},
	{Ours: Cachekit + "SetL2Only/encrypted/bytes/1KiB", Ref: Floor + "GoRedisSet/1KiB", Note: "the same Set with L1 off: seal plus round trip"},
	{Ours: Floor + "GoRedisSetAfterBusy2us/1KiB", Ref: Floor + "GoRedisSet/1KiB", Note: "raw SET after 2us of client CPU: what CPU between round trips costs here"},
	{Ours: Cachekit + "L2Get/encrypted/bytes/1KiB", Ref: Peer + "RedisGet/bytes/1KiB", Note: "peer unencrypted, local cache skipped"},
	{Ours: Cachekit + "Set/encrypted/bytes/1KiB", Ref: Peer + "Set/bytes/1KiB", Note: "peer unencrypted"},
	{Ours: Cachekit + "MGet100/encrypted/bytes/100B", Ref: Cachekit + "GetSeq100/encrypted/bytes/100B", Target: 20, AtLeast: true, Note: "speed-up of one MGet over 100 Gets"},
	{Ours: Cachekit + "L1Hit/encrypted/bytes/100B", Ref: Floor + "OpenRaw/100B", Note: "cost over one bare AES-GCM open"},
	{Ours: Cachekit + "L1Hit/encrypted/bytes/100B", Ref: Floor + "RistrettoGet/100B", Note: "cost over one bare ristretto Get"},
	{Ours: Cachekit + "L1Hit/encrypted/struct/100B", Ref: Floor + "MsgpackUnmarshal/struct/100B", Note: "cost over one bare msgpack decode"},
	{Ours: Cachekit + "L1Hit/encrypted/bytes/100B", Ref: Cachekit + "L1Hit/plain/bytes/100B", Note: "price of encryption on a hit"},
	{Ours: Cachekit + "L1HitParallel/encrypted/bytes/100B", Ref: Cachekit + "L1Hit/encrypted/bytes/100B", Note: "parallel ns/op over serial (GOMAXPROCS goroutines, one hot key)"},
	{Ours: Cachekit + "L1HitParallelDistinct/encrypted/bytes/100B", Ref: Cachekit + "L1Hit/encrypted/bytes/100B", Note: "parallel ns/op over serial (a key per goroutine)"},
	{Ours: Cachekit + "L1HitParallel/encrypted/struct/100B", Ref: Cachekit + "L1Hit/encrypted/struct/100B", Note: "parallel ns/op over serial (GOMAXPROCS goroutines, one hot key)"},
	{Ours: Cachekit + "L1HitParallelDistinct/encrypted/struct/100B", Ref: Cachekit + "L1Hit/encrypted/struct/100B", Note: "parallel ns/op over serial (a key per goroutine)"},
	{Ours: Cachekit + "L2GetParallel/encrypted/bytes/1KiB", Ref: Cachekit + "L2Get/encrypted/bytes/1KiB", Note: "parallel ns/op over serial"},
}

// Groups partitions rows (full benchmark names, in the order given) into
// the blocks a round runs back to back: each reference that a targeted
// pair uses, with every row measured against it, and every other row on
// its own. A block takes the place of its first row in rows; within a
// block rows keep their order.
func Groups(rows []string) [][]string {
	present := make(map[string]bool, len(rows))
	for _, r := range rows {
		present[r] = true
	}
	// A targeted reference leads its block; the rows measured against it
	// join it. A row compared with two such references joins the first.
	block := map[string]string{} // row -> its reference
	for _, p := range All {
		if p.Target > 0 && present[p.Ours] && present[p.Ref] {
			block[p.Ref] = p.Ref
		}
	}
	for _, p := range All {
		if _, ok := block[p.Ours]; ok || !present[p.Ours] {
			continue
		}
		if lead, ok := block[p.Ref]; ok && lead == p.Ref {
			block[p.Ours] = p.Ref
		}
	}
	var out [][]string
	at := map[string]int{} // reference -> index of its block in out
	for _, r := range rows {
		lead, ok := block[r]
		if !ok {
			out = append(out, []string{r})
			continue
		}
		if i, ok := at[lead]; ok {
			out[i] = append(out[i], r)
			continue
		}
		at[lead] = len(out)
		out = append(out, []string{r})
	}
	return out
}
