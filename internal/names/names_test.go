package names

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, KeySize) }

func mustNew(t testing.TB, key []byte, tenant, prefix string) *Namer {
	t.Helper()
	n, err := New(key, tenant, prefix, 1024)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNewRefusesKeySize(t *testing.T) {
	for _, size := range []int{0, 16, 31, 33, 64} {
		if _, err := New(make([]byte, size), "default", "", 0); err != ErrKeySize {
			t.Errorf("key of %d bytes: err = %v, want ErrKeySize", size, err)
		}
	}
}

func TestLocalShape(t *testing.T) {
	n := mustNew(t, testKey(1), "default", "app:")
	keys := []string{"user:alice@example.com", "session:9f8e7d6c5b4a", "x", "{}", "{a", "a}b{", "ü"}
	for _, k := range keys {
		local := n.Local(k)
		if len(local) != LocalLen {
			t.Errorf("%q: local length %d, want %d", k, len(local), LocalLen)
		}
		if strings.ContainsAny(local, "{}:=+/") {
			t.Errorf("%q: local %q has a character outside base64url", k, local)
		}
		if local != n.compute(k) || local != mustNew(t, testKey(1), "default", "app:").Local(k) {
			t.Errorf("%q: local name is not deterministic", k)
		}
	}
}

func TestHashTags(t *testing.T) {
	cases := []struct {
		key, tag string
		ok       bool
	}{
		{"{user1000}.following", "user1000", true},
		{"foo{}{bar}", "", false},
		{"foo{{bar}}zap", "{bar", true},
		{"foo{bar}{zap}", "bar", true},
		{"nothing", "", false},
		{"open{only", "", false},
	}
	for _, c := range cases {
		tag, ok := HashTag(c.key)
		if tag != c.tag || ok != c.ok {
			t.Errorf("HashTag(%q) = %q, %v; want %q, %v", c.key, tag, ok, c.tag, c.ok)
		}
	}
	n := mustNew(t, testKey(1), "default", "app:")
	a, b := n.Local("{user:42}:profile"), n.Local("{user:42}:orders")
	if len(a) != TaggedLen || a[0] != '{' || a[LocalLen+1] != '}' {
		t.Fatalf("tagged local %q is not {T}H", a)
	}
	if a[:LocalLen+2] != b[:LocalLen+2] {
		t.Errorf("keys sharing a tag got different opaque tags: %q, %q", a, b)
	}
	if a == b {
		t.Errorf("two keys sharing a tag got one name")
	}
	if c := n.Local("{user:43}:profile"); c[:LocalLen+2] == a[:LocalLen+2] {
		t.Errorf("different tags got one opaque tag")
	}
}

func TestLocalSeparates(t *testing.T) {
	base := mustNew(t, testKey(1), "default", "app:").Local("k")
	for name, n := range map[string]*Namer{
		"name key": mustNew(t, testKey(2), "default", "app:"),
		"tenant":   mustNew(t, testKey(1), "other", "app:"),
		"prefix":   mustNew(t, testKey(1), "default", "app2:"),
	} {
		if n.Local("k") == base {
			t.Errorf("another %s gave the same name", name)
		}
	}
	// The tenant and prefix are length-prefixed: moving a byte between them changes the name.
	if mustNew(t, testKey(1), "ab", "c").Local("k") == mustNew(t, testKey(1), "a", "bc").Local("k") {
		t.Error("tenant and prefix are not separated")
	}
}

func TestMemoCollisions(t *testing.T) {
	n, err := New(testKey(3), "default", "", 1) // 64 slots: many collisions
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range 1000 {
			k := strings.Repeat("k", i%7) + string(rune('a'+i%26)) + strings.Repeat("z", i/26)
			if round == 1 {
				k = "same-length-" + strconv.Itoa(1000+i) // collide with equal lengths
			}
			for range 2 { // the second call memoizes k, replacing a colliding key
				if got, want := n.Local(k), n.compute(k); got != want {
					t.Fatalf("round %d key %q: memo gave %q, want %q", round, k, got, want)
				}
			}
		}
	}
}

// A key named once (a stream of new keys) does not enter the memo; a key
// named twice does.
func TestMemoAdmitsAtSecondMiss(t *testing.T) {
	n := mustNew(t, testKey(2), "default", "")
	held := func() int {
		k := 0
		for i := range n.memo.slots {
			if n.memo.slots[i].Load() != nil {
				k++
			}
		}
		return k
	}
	for i := range 10_000 {
		n.Local("once:" + strconv.Itoa(i))
	}
	if k := held(); k != 0 {
		t.Fatalf("%d keys named once are memoized", k)
	}
	n.Local("twice")
	n.Local("twice")
	if k := held(); k != 1 {
		t.Fatalf("%d slots hold a key after one key was named twice", k)
	}
	if got, ok := n.memo.get("twice"); !ok || got != n.compute("twice") {
		t.Fatalf("memo holds %q, %v", got, ok)
	}
}

func TestLocalHitAllocs(t *testing.T) {
	n := mustNew(t, testKey(1), "default", "app:")
	n.Local("session:abc")
	n.Local("session:abc") // memoized at its second miss
	if a := testing.AllocsPerRun(100, func() { n.Local("session:abc") }); a != 0 {
		t.Errorf("a memo hit allocates %.1f times", a)
	}
}

func TestFingerprint(t *testing.T) {
	a, b := Fingerprint(testKey(1)), Fingerprint(testKey(2))
	if len(a) != 32 || a == b || a != mustNew(t, testKey(1), "t", "p").Fingerprint() {
		t.Errorf("fingerprints %q, %q", a, b)
	}
	if Fingerprint(testKey(1)[:31]) != "" {
		t.Error("a short key has a fingerprint")
	}
}

func BenchmarkLocal(b *testing.B) {
	n := mustNew(b, testKey(1), "default", "app:")
	b.Run("memo-hit", func(b *testing.B) {
		n.Local("user:alice@example.com")
		n.Local("user:alice@example.com")
		b.ReportAllocs()
		for b.Loop() {
			n.Local("user:alice@example.com")
		}
	})
	b.Run("compute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n.compute("user:alice@example.com")
		}
	})
}

func TestInvalidUTF8(t *testing.T) {
	n := mustNew(t, testKey(1), "default", "")
	for _, k := range []string{"\xff", "user:\xc3", "a\xffb"} {
		if got := n.Local(k); got != Invalid {
			t.Errorf("%q: local %q, want Invalid", k, got)
		}
	}
}

func TestEmptyKey(t *testing.T) {
	if got := mustNew(t, testKey(1), "default", "app:").Local(""); got != "" {
		t.Errorf("the empty key maps to %q", got)
	}
}

// TestVectors pins the format other SDKs would implement (docs/rotation.md,
// "The name, precisely"); the expected values were computed independently
// with Python's hmac module from that description.
func TestVectors(t *testing.T) {
	n := mustNew(t, testKey(0x17), "default", "app:")
	for key, want := range map[string]string{
		"user:alice@example.com":     "Ep23dmtt5QAt85Xxg27qXg",
		"{tenant:acme-corp}:profile": "{dLXYuBREw9UaCm_UoRTueA}lof42xk6mO1BblfM0Lcc1g",
	} {
		if got := n.Local(key); got != want {
			t.Errorf("Local(%q) = %q, want %q", key, got, want)
		}
	}
	if got := n.Fingerprint(); got != "284304dbc45a82e94721520b97ef5463" {
		t.Errorf("Fingerprint = %q", got)
	}
}

func TestIsFingerprint(t *testing.T) {
	if !IsFingerprint(Fingerprint(testKey(1))) {
		t.Error("a fingerprint is not IsFingerprint")
	}
	for _, s := range []string{"", "secret-value-of-someone", strings.Repeat("A", 32), strings.Repeat("0", 31)} {
		if IsFingerprint(s) {
			t.Errorf("IsFingerprint(%q)", s)
		}
	}
}
