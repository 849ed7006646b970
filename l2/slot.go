package l2

import "strings"

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// crc16Table is CRC-16/XMODEM (polynomial 0x1021, initial value 0, no
// reflection), the checksum Redis Cluster uses to place keys.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// hashTag returns the part of key that decides its slot: the text between
// the first '{' and the first '}' after it, when that text is non-empty;
// otherwise the whole key.
func hashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	n := strings.IndexByte(key[open+1:], '}')
	if n <= 0 { // no closing brace, or "{}"
		return key
	}
	return key[open+1 : open+1+n]
}

// slotOf returns the Redis Cluster hash slot of key, in [0, 16384).
func slotOf(key string) int {
	return int(crc16(hashTag(key))) & (numSlots - 1)
}

// slotGroup is the keys of one request that share a hash slot, as indexes
// into the request's key slice, in request order.
type slotGroup struct {
	slot int
	idx  []int
}

// groupBySlot partitions keys by hash slot. Groups appear in the order of
// their first key, so the result is deterministic.
func groupBySlot(keys []string) []slotGroup {
	var groups []slotGroup
	pos := make(map[int]int, 4) // slot -> index in groups
	for i, k := range keys {
		s := slotOf(k)
		g, ok := pos[s]
		if !ok {
			g = len(groups)
			pos[s] = g
			groups = append(groups, slotGroup{slot: s})
		}
		groups[g].idx = append(groups[g].idx, i)
	}
	return groups
}

// pick returns the keys of g, in order.
func (g slotGroup) pick(keys []string) []string {
	out := make([]string, len(g.idx))
	for j, i := range g.idx {
		out[j] = keys[i]
	}
	return out
}
