package l2

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// Every kind of the placeholder family has a 12-byte head, 0xc1 "ck-"
// <kind> "/1 ", and its own fixed length.
func TestPlaceholderFamily(t *testing.T) {
	t.Parallel()
	for head, n := range kinds {
		if len(head) != placeholderHead || !strings.HasPrefix(head, "\xc1ck-") || !strings.HasSuffix(head, "/1 ") || n <= placeholderHead {
			t.Errorf("kind %q of length %d", head, n)
		}
	}
	neg := NegativeMagic + strings.Repeat("x", NegativeLen-len(NegativeMagic))
	lease := NewLease()
	for _, c := range []struct {
		b                        string
		lease, negative, present bool
	}{
		{lease, true, false, true},
		{neg, false, true, true},
		{neg[:NegativeLen-1], false, false, false},
		{neg + "x", false, false, false},
		{lease[:LeaseLen-1], false, false, false},
		{NegativeMagic, false, false, false},
		{strings.Replace(neg, "absnt", "lease", 1), false, false, false}, // a lease's head at a negative entry's length
		{"", false, false, false},
	} {
		b := []byte(c.b)
		if IsLease(b) != c.lease || IsNegative(b) != c.negative || IsPlaceholder(b) != c.present {
			t.Errorf("%q: lease %v negative %v placeholder %v", c.b, IsLease(b), IsNegative(b), IsPlaceholder(b))
		}
	}
}

// A negative entry is a placeholder to every command that answers from the
// key's presence (Exists, TTL, ExpireTime, Expire, SetCond, Delete's
// count), and its bytes come back from the reads that return bytes, for
// the client to authenticate; the lease scripts find it as an entry.
func TestNegativeEntryIsAbsentToPresence(t *testing.T) {
	t.Parallel()
	f := setup(t)
	neg := NegativeMagic + strings.Repeat("\x07", NegativeLen-len(NegativeMagic))
	f.rdb.Set(bg, "n", neg, time.Minute)
	f.rdb.Set(bg, "other", "v", time.Minute)
	if ok, err := f.store.Exists(bg, "n"); ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if _, err := f.store.TTL(bg, "n"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("TTL = %v", err)
	}
	if _, err := f.store.ExpireTime(bg, "n"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("ExpireTime = %v", err)
	}
	if ok, err := f.store.Expire(bg, "n", time.Hour); ok || err != nil {
		t.Fatalf("Expire = %v, %v", ok, err)
	}
	if d := f.rdb.PTTL(bg, "n").Val(); d > time.Minute {
		t.Fatalf("Expire extended the negative entry to %v", d)
	}
	if ok, err := f.store.SetCond(bg, "n", []byte("x"), time.Minute, true, false); ok || err != nil {
		t.Fatalf("SetCond XX = %v, %v", ok, err)
	}
	for name, read := range map[string]func() ([]byte, error){
		"Get":     func() ([]byte, error) { return f.store.Get(bg, "n") },
		"GetUpTo": func() ([]byte, error) { return f.store.GetUpTo(bg, "n", 1<<20) },
		"GetWithTTLUpTo": func() ([]byte, error) {
			b, _, err := f.store.GetWithTTLUpTo(bg, "n", 1<<20)
			return b, err
		},
		"MGet": func() ([]byte, error) {
			vals, err := f.store.MGet(bg, []string{"n", "other"})
			return vals[0], err
		},
		"MGetWithTTL": func() ([]byte, error) {
			vals, _, err := f.store.MGetWithTTL(bg, []string{"n", "other"})
			return vals[0], err
		},
		"readRaw": func() ([]byte, error) {
			vals, _, _, err := f.store.readRaw(bg, []string{"n"})
			return vals[0], err
		},
	} {
		if b, err := read(); err != nil || string(b) != neg {
			t.Errorf("%s = %q, %v; want the negative entry's bytes", name, b, err)
		}
	}
	if st, entry, _, err := f.store.Acquire(bg, "n", NewLease(), time.Minute, ""); st != LeaseFoundEntry || string(entry) != neg || err != nil {
		t.Fatalf("Acquire = %v %q, %v", st, entry, err)
	}
	if n, err := f.store.Delete(bg, "n", "other"); n != 1 || err != nil {
		t.Fatalf("Delete = %d, %v; want 1 (the negative entry removed, not counted)", n, err)
	}
	f.rdb.Set(bg, "n", neg, time.Minute)
	if ok, err := f.store.SetCond(bg, "n", []byte("x"), time.Minute, false, false); !ok || err != nil {
		t.Fatalf("SetCond NX over a negative entry = %v, %v", ok, err)
	}
	// Bytes with the head but not the kind's length are an entry.
	f.rdb.Set(bg, "long", neg+"x", time.Minute)
	if ok, err := f.store.Exists(bg, "long"); !ok || err != nil {
		t.Fatalf("Exists(long) = %v, %v", ok, err)
	}
}
