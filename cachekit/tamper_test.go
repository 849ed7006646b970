package cachekit

import (
	"errors"
	"testing"
	"time"

	"github.com/cachekit-io/cachekit-go/protocol"
)

// TestTamperedEntryInRedisFailsAuthentication: every single-bit flip of a
// sealed entry in Redis, and every truncation, fails authentication and is
// never a value: an L2 *EntryError matching ErrAuthFailed, and, as every
// entry that cannot be opened, a miss (IOP-24: it matches ErrNotFound),
// counted in Stats.L2OpenFailures.
func TestTamperedEntryInRedisFailsAuthentication(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{Encryption: encConfig("")})
	mustSetTTL(t, c, "victim", sampleProfile(), time.Minute)
	orig, err := rdb.Get(bg, "victim").Bytes()
	if err != nil {
		t.Fatal(err)
	}
	// Flip one bit at a time across the whole stored entry (stepping to keep
	// the test quick for long entries); never a value, always ErrAuthFailed.
	step := max(1, len(orig)*8/256)
	for bit := 0; bit < len(orig)*8; bit += step {
		bad := append([]byte(nil), orig...)
		bad[bit/8] ^= 1 << (bit % 8)
		if err := rdb.Set(bg, "victim", bad, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		var got profile
		err := c.Get(bg, "victim", &got)
		var ee *EntryError
		if !errors.Is(err, ErrAuthFailed) || !errors.As(err, &ee) || ee.Tier != TierL2 {
			t.Fatalf("bit %d: err = %v, want an L2 *EntryError wrapping ErrAuthFailed", bit, err)
		}
	}
	for n := 0; n < len(orig); n++ {
		if err := rdb.Set(bg, "victim", orig[:n], time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		err := c.Get(bg, "victim", new(profile))
		var ee *EntryError
		if n == 0 && errors.Is(err, ErrNotFound) && !errors.As(err, &ee) {
			// Without L1 a read is GETRANGE alone, which answers a missing
			// key and an empty value alike: emptying an entry does what a
			// DEL does, nothing more.
			continue
		}
		// A miss (IOP-24) that still says why: the entry did not
		// authenticate.
		if !errors.As(err, &ee) || !ee.Unopenable || !errors.Is(err, ErrAuthFailed) || !errors.Is(err, ErrNotFound) {
			t.Fatalf("truncated to %d bytes: err = %v, want an unopenable *EntryError matching ErrAuthFailed and ErrNotFound", n, err)
		}
	}
	if got := c.Stats().L2OpenFailures; got == 0 {
		t.Fatal("open failures were not counted")
	}
}

// TestCiphertextMovedToAnotherKeyFails: a sealed entry copied to another key
// fails authentication there, with the Client's one AAD for that key and no
// retry under another (ENC-1), and is never admitted to L1.
func TestCiphertextMovedToAnotherKeyFails(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSet(t, c, "user:1", "alice-secret")
	mustSet(t, c, "user:2", "bob-secret")
	a, _ := rdb.Get(bg, "user:1").Bytes()
	if err := rdb.Set(bg, "user:2", a, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	v, err := Get[string](bg, fresh, "user:2")
	if !errors.Is(err, ErrAuthFailed) || v != "" {
		t.Fatalf("swapped ciphertext read as %q, %v; want ErrAuthFailed", v, err)
	}
	// The swapped entry was not admitted to L1: a retry fails the same way.
	if _, err := Get[string](bg, fresh, "user:2"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("second read: %v", err)
	}
	if fresh.Stats().L1Bytes != 0 {
		t.Fatal("unauthenticated bytes were admitted to L1")
	}
}

// TestWrongTenantAndWrongKeyFail: an entry written for one tenant does not
// open for another, nor under another master key: key derivation and AAD use
// the one resolved tenant (PRE-28).
func TestWrongTenantAndWrongKeyFail(t *testing.T) {
	t.Parallel()
	w, rdb := redisClient(t, Options{Encryption: encConfig("tenant-a")})
	mustSet(t, w, "k", "v")
	other := newClient(t, Options{Redis: rdb, Encryption: encConfig("tenant-b")})
	if _, err := Get[string](bg, other, "k"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("wrong tenant: %v", err)
	}
	cfg := encConfig("tenant-a")
	cfg.MasterKey[0] ^= 1
	wrongKey := newClient(t, Options{Redis: rdb, Encryption: cfg})
	if _, err := Get[string](bg, wrongKey, "k"); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("wrong master key: %v", err)
	}
	// A plaintext reader must not return the ciphertext as a value either.
	plain := newClient(t, Options{Redis: rdb})
	if _, err := Get[string](bg, plain, "k"); err == nil {
		t.Fatal("plaintext client decoded an encrypted entry")
	}
	// Nothing already stored was lost: the right client still reads it.
	if v, err := Get[string](bg, newClient(t, Options{Redis: rdb, Encryption: encConfig("tenant-a")}), "k"); err != nil || v != "v" {
		t.Fatalf("original entry: %q %v", v, err)
	}
}

func TestCorruptL1EntryIsEvictedAndReadFallsBackToRedis(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20, Encryption: encConfig("")})
	mustSet(t, c, "k", "good")
	c.l1.Set("k", []byte("garbage that is not a sealed entry"), time.Minute)
	if v, err := Get[string](bg, c, "k"); err != nil || v != "good" {
		t.Fatalf("got %q %v, want the L2 value", v, err)
	}
	if st := c.Stats(); st.L1OpenFailures != 1 || st.L2Hits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestMalformedPlainEntries(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{})
	bad := map[string][]byte{
		"empty":        {},
		"not envelope": []byte("hello"),
		"python frame": append([]byte("CK"), 1, 2, 3),
		"bomb header":  {0x94, 0xc4, 0x01, 0x00, 0x98, 0, 0, 0, 0, 0, 0, 0, 0, 0xce, 0x1f, 0xff, 0xff, 0xff, 0xa7, 'm', 's', 'g', 'p', 'a', 'c', 'k'},
	}
	for name, b := range bad {
		if err := rdb.Set(bg, name, b, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		var v any
		err := c.Get(bg, name, &v)
		var fe *protocol.FormatError
		if name == "empty" && errors.Is(err, ErrNotFound) && v == nil {
			continue // without L1, GETRANGE reads an empty value as a missing key (as a DEL would leave it)
		}
		if !errors.As(err, &fe) || v != nil {
			t.Errorf("%s: err = %v, value %v; want a *FormatError and no value", name, err, v)
		}
	}
}
