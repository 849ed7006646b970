package l2

import "strings"

// Subscribe listens on channel for the announcements Stores make there
// (AnnounceWrites: "ck1 <source> <key>") and reports each announced key
// to h.Invalidate, except those this Store announced itself. A message in
// another shape reports every key (nil): it may be a later format naming
// keys this one cannot read. It is the fallback for a Redis that refuses
// CLIENT TRACKING, and hears only writers that announce.
//
// The returned Tracker behaves as Track's does (Ready, Settled, Down, Up,
// Refused, Close), with one connection of its own per node of a
// standalone, failover or ring client (a ring routes each PUBLISH to one
// shard), and one only on a cluster, where a PUBLISH reaches every node.
// A SUBSCRIBE the server refuses (an ACL user without the channel right)
// is reported to h.Refused.
func (s *Store) Subscribe(channel string, h TrackingHandler) (*Tracker, error) {
	own := string(s.source)
	keysOf := func(payload string) ([]string, bool) {
		if own != "" && strings.HasPrefix(payload, own) {
			return nil, false // this Store's own write: its L1 is already right
		}
		rest, ok := strings.CutPrefix(payload, invalidationMagic)
		if !ok {
			return nil, true
		}
		src, key, ok := strings.Cut(rest, " ")
		if !ok || len(src) != 2*sourceBytes || key == "" {
			return nil, true
		}
		return []string{key}, true
	}
	return s.listen(&Tracker{channel: channel, keysOf: keysOf, h: h})
}
