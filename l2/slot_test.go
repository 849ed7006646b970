package l2

import (
	"reflect"
	"strings"
	"testing"
)

// knownSlots were read from redis-server 7.0.15 (cluster mode) with
// CLUSTER KEYSLOT.
var knownSlots = []struct {
	key  string
	slot int
}{
	{"foo", 12182},
	{"bar", 5061},
	{"123456789", 12739},
	{"somekey", 11058},
	{"hello", 866},
	{"foo{hash_tag}", 2515},
	{"{user1000}.following", 3443},
	{"{user1000}.followers", 3443},
	{"{}foo", 9500},         // empty tag: whole key
	{"foo{}{bar}", 8363},    // first tag empty: whole key
	{"foo{{bar}}zap", 4015}, // tag is "{bar"
	{"foo{bar}{zap}", 5061}, // only the first tag counts: "bar"
	{"{", 4092},             // no closing brace
	{"}", 12090},            // no opening brace
	{"", 0},                 // empty key
	{"a{b", 13340},          // unclosed tag
	{"cachekit:t1:key", 8238},
}

func TestSlotOfKnownKeys(t *testing.T) {
	if len(knownSlots) == 0 {
		t.Fatal("no slot vectors")
	}
	for _, tc := range knownSlots {
		t.Run(tc.key, func(t *testing.T) {
			if got := slotOf(tc.key); got != tc.slot {
				t.Fatalf("slotOf = %d, want %d", got, tc.slot)
			}
		})
	}
}

func TestCRC16CheckValue(t *testing.T) {
	// CRC-16/XMODEM check value: the CRC of "123456789".
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#04x, want 0x31c3", got)
	}
}

func TestHashTag(t *testing.T) {
	cases := map[string]string{
		"plain":         "plain",
		"{tag}rest":     "tag",
		"pre{tag}":      "tag",
		"{}x":           "{}x",
		"x{":            "x{",
		"x}{y}":         "y",
		"{a}{b}":        "a",
		"{{a}}":         "{a",
		"}{":            "}{",
		"{\x00}":        "\x00",
		"ключ{тег}ключ": "тег",
	}
	for in, want := range cases {
		if got := hashTag(in); got != want {
			t.Errorf("hashTag(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGroupBySlot(t *testing.T) {
	keys := []string{"{a}1", "foo", "{a}2", "bar", "{a}3", "foo"}
	groups := groupBySlot(keys)
	want := []slotGroup{
		{slot: slotOf("a"), idx: []int{0, 2, 4}},
		{slot: 12182, idx: []int{1, 5}},
		{slot: 5061, idx: []int{3}},
	}
	if !reflect.DeepEqual(groups, want) {
		t.Fatalf("groupBySlot = %+v, want %+v", groups, want)
	}
	if got := groups[0].pick(keys); !reflect.DeepEqual(got, []string{"{a}1", "{a}2", "{a}3"}) {
		t.Fatalf("pick = %q", got)
	}
	if g := groupBySlot(nil); len(g) != 0 {
		t.Fatalf("groupBySlot(nil) = %+v", g)
	}
	// Every index appears exactly once, and each group is one slot.
	seen := make([]bool, len(keys))
	for _, g := range groups {
		for _, i := range g.idx {
			if seen[i] || slotOf(keys[i]) != g.slot {
				t.Fatalf("index %d misplaced", i)
			}
			seen[i] = true
		}
	}
}

// FuzzSlotOf checks the hash-tag rules against the implementation: a key
// with a non-empty tag lands where the bare tag does, and every slot is in
// range.
func FuzzSlotOf(f *testing.F) {
	n := 0
	for _, tc := range knownSlots {
		f.Add(tc.key, "{x}")
		n++
	}
	if n == 0 {
		f.Fatal("empty seed set")
	}
	f.Fuzz(func(t *testing.T, key, tag string) {
		s := slotOf(key)
		if s < 0 || s >= numSlots {
			t.Fatalf("slot %d out of range", s)
		}
		tag = strings.NewReplacer("{", "", "}", "").Replace(tag)
		if tag == "" {
			return
		}
		prefix := strings.NewReplacer("{", "", "}", "").Replace(key)
		tagged := prefix + "{" + tag + "}" + key
		if slotOf(tagged) != slotOf(tag) {
			t.Fatalf("tagged key not in its tag's slot")
		}
	})
}
