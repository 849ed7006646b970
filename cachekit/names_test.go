package cachekit

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// Name keys of the tests (never real keys).
var (
	testNameKey  = bytes.Repeat([]byte{0x17}, 32)
	otherNameKey = bytes.Repeat([]byte{0x18}, 32)
	newMasterKey = bytes.Repeat([]byte{0x43}, 32)
)

// namedOpts is a prefixed, encrypted Client's options with nameKey.
func namedOpts(nameKey []byte) Options {
	enc := encConfig("t1")
	enc.NameKey = append([]byte(nil), nameKey...)
	return Options{L1MaxBytes: 1 << 20, KeyPrefix: "app:", Encryption: enc}
}

// Keys the acceptance tests store: identifiers an application's keys carry.
const (
	emailKey   = "user:alice@example.com"
	tokenKey   = "session:tok_9f8e7d6c5b4a3f2e1d0c"
	emailKey2  = "user:bob.smith@corp.example.org"
	taggedKey1 = "{tenant:acme-corp}:profile"
	taggedKey2 = "{tenant:acme-corp}:invoices"
)

var namedKeys = []string{emailKey, tokenKey, emailKey2, taggedKey1, taggedKey2}

// redisKeys returns every key the Redis behind rdb holds.
func redisKeys(t *testing.T, rdb *redis.Client) []string {
	t.Helper()
	keys, err := rdb.Keys(bg, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// checkOpaque fails t when a Redis key does not start with "app:" or
// contains a 4-byte substring of one of keys.
func checkOpaque(t *testing.T, names, keys []string) {
	t.Helper()
	if len(names) == 0 {
		t.Fatal("redis holds no keys")
	}
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, "app:")
		if !ok {
			t.Errorf("redis key %q does not start with the prefix", n)
		}
		for _, k := range keys {
			for i := 0; i+4 <= len(k); i++ {
				if strings.Contains(rest, k[i:i+4]) {
					t.Errorf("redis key %q holds %q of key %q", n, k[i:i+4], k)
				}
			}
		}
	}
}

// storeNamed writes the acceptance keys through every write path: Set,
// MSet, SetIfAbsent and GetOrLoad.
func storeNamed(t *testing.T, c *Client) {
	t.Helper()
	mustSet(t, c, emailKey, "alice")
	if err := c.MSet(bg, map[string]any{tokenKey: "tok", emailKey2: "bob"}); err != nil {
		t.Fatal(err)
	}
	if ok, err := c.SetIfAbsent(bg, taggedKey1, "profile", time.Minute); err != nil || !ok {
		t.Fatalf("SetIfAbsent: %v, %v", ok, err)
	}
	if v, err := GetOrLoad(bg, c, taggedKey2, func(context.Context) (string, error) { return "invoices", nil }); err != nil || v != "invoices" {
		t.Fatalf("GetOrLoad: %q, %v", v, err)
	}
}

var namedValues = map[string]string{emailKey: "alice", tokenKey: "tok", emailKey2: "bob", taggedKey1: "profile", taggedKey2: "invoices"}

// checkReads reads every acceptance key through every read path of c.
func checkReads(t *testing.T, c *Client) {
	t.Helper()
	for k, want := range namedValues {
		if v, err := Get[string](bg, c, k); err != nil || v != want {
			t.Errorf("Get %q: %q, %v", k, v, err)
		}
		if v, left, err := GetWithTTL[string](bg, c, k); err != nil || v != want || left <= 0 {
			t.Errorf("GetWithTTL %q: %q, %v, %v", k, v, left, err)
		}
		if ok, err := c.Exists(bg, k); err != nil || !ok {
			t.Errorf("Exists %q: %v, %v", k, ok, err)
		}
		if left, err := c.TTL(bg, k); err != nil || left <= 0 {
			t.Errorf("TTL %q: %v, %v", k, left, err)
		}
		if v, err := GetOrLoad(bg, c, k, func(context.Context) (string, error) { return "", errors.New("loaded") }); err != nil || v != want {
			t.Errorf("GetOrLoad %q: %q, %v", k, v, err)
		}
		stored, err := c.Raw().Get(bg, k)
		if err != nil {
			t.Errorf("Raw.Get %q: %v", k, err)
		} else if _, err := c.Raw().Open(bg, k, stored); err != nil {
			t.Errorf("Raw.Open %q: %v", k, err)
		}
	}
	got, err := MGet[string](bg, c, namedKeys)
	if err != nil || len(got) != len(namedValues) {
		t.Errorf("MGet: %v, %v", got, err)
	}
	for k, want := range namedValues {
		if got[k] != want {
			t.Errorf("MGet %q: %q", k, got[k])
		}
	}
	loaded, err := MGetOrLoad(bg, c, namedKeys, func(context.Context, []string) (map[string]string, error) {
		return nil, errors.New("loaded")
	})
	if err != nil || len(loaded) != len(namedValues) || loaded[emailKey] != "alice" {
		t.Errorf("MGetOrLoad: %v, %v", loaded, err)
	}
}

// With a name key, Redis learns no key: every name is the prefix and an
// opaque name, every read path finds the values (from L1, and from Redis
// by a second Client), and Delete removes the opaque entry.
func TestNameKeyRedisLearnsNoKey(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, namedOpts(testNameKey))
	storeNamed(t, c)
	checkOpaque(t, redisKeys(t, rdb), namedKeys)

	checkReads(t, c) // L1 hits
	opts := namedOpts(testNameKey)
	opts.L1MaxBytes, opts.Redis = 0, rdb
	checkReads(t, newClient(t, opts)) // from Redis

	// MGetOrLoad stores what it loads under opaque names too.
	if _, err := MGetOrLoad(bg, c, []string{"user:carol@example.net"}, func(_ context.Context, missing []string) (map[string]string, error) {
		if len(missing) != 1 || missing[0] != "user:carol@example.net" {
			t.Errorf("the loader was asked for %q", missing)
		}
		return map[string]string{"user:carol@example.net": "carol"}, nil
	}); err != nil {
		t.Fatal(err)
	}
	checkOpaque(t, redisKeys(t, rdb), append(namedKeys, "user:carol@example.net"))

	stored := "app:" + c.Raw().StoredKey(emailKey)
	if n, _ := rdb.Exists(bg, stored).Result(); n != 1 {
		t.Fatalf("the stored name %q is not in redis", stored)
	}
	if err := c.Delete(bg, emailKey); err != nil {
		t.Fatal(err)
	}
	if n, _ := rdb.Exists(bg, stored).Result(); n != 0 {
		t.Errorf("Delete left the opaque entry")
	}
	if _, err := Get[string](bg, c, emailKey); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Delete: %v", err)
	}
}

// Keys sharing a hash tag share one opaque tag, so one Cluster slot: a
// 3-master cluster reads them in one MGet.
func TestNameKeyHashTagSharesSlot(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	opts := namedOpts(testNameKey)
	opts.RedisURL = cl.URL()
	c := newClient(t, opts)
	a, b := c.Raw().StoredKey(taggedKey1), c.Raw().StoredKey(taggedKey2)
	tagA, _, _ := strings.Cut(a, "}")
	tagB, _, _ := strings.Cut(b, "}")
	if !strings.HasPrefix(a, "{") || tagA != tagB || a == b {
		t.Fatalf("stored names %q and %q do not share one opaque tag", a, b)
	}
	if sa, sb := cl.Slot(t, "app:"+a), cl.Slot(t, "app:"+b); sa != sb {
		t.Fatalf("tagged keys in slots %d and %d", sa, sb)
	}
	keys := []string{taggedKey1, taggedKey2, "{tenant:acme-corp}:users"}
	for i, k := range keys {
		mustSet(t, c, k, i)
	}
	got, err := MGet[int](bg, c, keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("MGet: %v, %v", got, err)
	}
	for i, k := range keys {
		if got[k] != i {
			t.Errorf("MGet %q: %d", k, got[k])
		}
	}
}

// A master-key rotation moves no name: a Client with a new master key and
// the old one as previous reads what was written before; a Client with
// another name key sees none of it, and New refuses it unless told to
// warn.
func TestNameKeyIndependentOfMasterKey(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, namedOpts(testNameKey))
	storeNamed(t, c)

	rotated := namedOpts(testNameKey)
	rotated.Redis = rdb
	rotated.Encryption.MasterKey = append([]byte(nil), newMasterKey...)
	rotated.Encryption.PreviousKeys = [][]byte{append([]byte(nil), testKey...)}
	checkReads(t, newClient(t, rotated))

	other := namedOpts(otherNameKey)
	other.Redis = rdb
	_, err := New(other)
	var mismatch *NameKeyMismatchError
	if !errors.Is(err, ErrConfig) || !errors.As(err, &mismatch) || mismatch.Found == mismatch.Want {
		t.Fatalf("New with another name key: %v", err)
	}
	other.WarnNameKeyMismatch = true
	o := newClient(t, other)
	for _, k := range namedKeys {
		if _, err := Get[string](bg, o, k); !errors.Is(err, ErrNotFound) {
			t.Errorf("another name key reads %q: %v", k, err)
		}
	}
}

// Tracking invalidation reaches another Client's L1 within a second with
// opaque names (the tracked prefix is still readable).
func TestNameKeyTrackingInvalidation(t *testing.T) {
	t.Parallel()
	srv, _ := withRedis(t)
	opts := namedOpts(testNameKey)
	opts.RedisURL, opts.Invalidation = srv.URL(), &Invalidation{}
	reader, writer := newClient(t, opts), newClient(t, opts)
	mustSet(t, writer, emailKey, "old")
	fillL1(t, reader, emailKey, "old")
	mustSet(t, writer, emailKey, "new")
	waitWithin(t, time.Second, func() bool {
		v, err := Get[string](bg, reader, emailKey)
		return err == nil && v == "new"
	})
	if reader.InvalidationStats().Applied == 0 {
		t.Error("no invalidation applied")
	}
}

// The AAD binds the stored name: an entry copied to another key's opaque
// name does not open there.
func TestNameKeyAADBindsStoredName(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{KeyPrefix: "app:", Encryption: namedOpts(testNameKey).Encryption})
	mustSet(t, c, emailKey, "alice")
	mustSet(t, c, emailKey2, "bob")
	b, err := rdb.Get(bg, "app:"+c.Raw().StoredKey(emailKey)).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(bg, "app:"+c.Raw().StoredKey(emailKey2), b, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := Get[string](bg, c, emailKey2); !errors.Is(err, ErrAuthFailed) {
		t.Fatalf("a moved entry opened: %q, %v", v, err)
	}
}

// Interop mode refuses a name key; a malformed one is ErrConfig too.
// An unsupported combination fails at construction (PRE-33).
func TestNameKeyConfig(t *testing.T) {
	t.Parallel()
	opts := namedOpts(testNameKey)
	opts.KeyPrefix, opts.Interop = "", true
	if _, err := New(opts); !errors.Is(err, ErrConfig) {
		t.Errorf("interop + NameKey: %v", err)
	}
	for name, key := range map[string][]byte{"short": make([]byte, 31), "zero": make([]byte, 32), "master": testKey} {
		opts := namedOpts(key)
		if _, err := New(opts); !errors.Is(err, ErrConfig) {
			t.Errorf("NameKey %s: %v", name, err)
		}
	}
}

// Without a name key nothing changes: keys are stored as they are and no
// marker is written.
func TestNoNameKeyUnchanged(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, Options{KeyPrefix: "app:", Encryption: encConfig("t1")})
	mustSet(t, c, emailKey, "alice")
	if keys := redisKeys(t, rdb); len(keys) != 1 || keys[0] != "app:"+emailKey {
		t.Fatalf("redis holds %q", keys)
	}
	if c.Raw().StoredKey(emailKey) != emailKey {
		t.Error("StoredKey maps without a name key")
	}
}

// Secure reads CACHEKIT_NAME_KEY (not parallel: it sets the environment).
func TestSecureReadsNameKey(t *testing.T) {
	t.Setenv(NameKeyEnv, strings.Repeat("17", 32))
	opts, err := Secure(strings.Repeat("42", 32))
	if err != nil || !bytes.Equal(opts.Encryption.NameKey, testNameKey) {
		t.Fatalf("Secure: %v, %x", err, opts.Encryption.NameKey)
	}
	t.Setenv(NameKeyEnv, "not hex")
	_, err = Secure(strings.Repeat("42", 32))
	if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), "not hex") {
		t.Fatalf("a malformed name key: %v", err)
	}
	var ce *encryption.ConfigError
	if !errors.As(err, &ce) || ce.Field != "NameKey" {
		t.Errorf("the error does not name NameKey: %v", err)
	}
}

// SWR refreshes an entry under its opaque name, in the background, with
// the full TTL.
func TestNameKeySWRRefresh(t *testing.T) {
	t.Parallel()
	c, clk := swrClient(t, func(o *Options) {
		o.KeyPrefix = "app:"
		o.Encryption.NameKey = append([]byte(nil), testNameKey...)
	})
	var version atomic.Int64
	load := func(context.Context) (int64, error) { return version.Add(1), nil }
	if v, err := GetOrLoadTTL(bg, c, emailKey, swrTTL, load); err != nil || v != 1 {
		t.Fatalf("cold: %d, %v", v, err)
	}
	clk.Add(swrDue)
	if v, err := GetOrLoadTTL(bg, c, emailKey, swrTTL, load); err != nil || v != 1 {
		t.Fatalf("stale read: %d, %v", v, err)
	}
	waitWithin(t, 5*time.Second, func() bool { v, _ := Get[int64](bg, c, emailKey); return v == 2 })
	if ttl, err := c.TTL(bg, emailKey); err != nil || ttl < time.Second {
		t.Fatalf("the refresh did not rewrite the opaque entry with the full TTL: %v, %v", ttl, err)
	}
}

// The tools' door: Scan reports stored (opaque) names, Open of a scanned
// entry works through StoredKey's name, Swap takes stored names, and
// DeleteMatching deletes by stored name.
func TestNameKeyRawDoor(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, namedOpts(testNameKey))
	storeNamed(t, c)
	stored := map[string]bool{}
	for _, k := range namedKeys {
		stored[c.Raw().StoredKey(k)] = true
	}
	var seen []RawEntry
	if err := c.Raw().Scan(bg, "*", func(b []RawEntry) error { seen = append(seen, b...); return nil }); err != nil {
		t.Fatal(err)
	}
	entries := 0
	for _, e := range seen {
		switch {
		case stored[e.Key]:
			entries++
		case e.Key != NameMarker("t1"):
			t.Errorf("Scan reported %q, neither an entry's stored name nor the marker", e.Key)
		}
	}
	if entries != len(namedKeys) {
		t.Fatalf("Scan found %d of %d entries", entries, len(namedKeys))
	}
	// Swap takes the stored name: alice's bytes swapped for themselves.
	name := c.Raw().StoredKey(emailKey)
	b, err := rdb.Get(bg, "app:"+name).Bytes()
	if err != nil {
		t.Fatal(err)
	}
	done, errs := c.Raw().Swap(bg, []RawSwap{{Key: name, Old: b, New: b}})
	if !done[0] || errs[0] != nil {
		t.Fatalf("Swap by stored name: %v, %v", done, errs)
	}
	if n, err := c.Raw().DeleteMatching(bg, "*"); err != nil || n != int64(len(namedKeys))+1 {
		t.Fatalf("DeleteMatching: %d, %v", n, err)
	}
	if keys := redisKeys(t, rdb); len(keys) != 0 {
		t.Fatalf("left %q", keys)
	}
}

// An entry Scan found opens by its stored name (OpenStored), not by Open,
// which maps an application's key.
func TestNameKeyOpenStored(t *testing.T) {
	t.Parallel()
	c, _ := redisClient(t, namedOpts(testNameKey))
	mustSet(t, c, emailKey, "alice")
	name := c.Raw().StoredKey(emailKey)
	var found []byte
	if err := c.Raw().Scan(bg, name, func(b []RawEntry) error { found = b[0].Stored; return nil }); err != nil || found == nil {
		t.Fatalf("Scan of the stored name: %v", err)
	}
	if _, err := c.Raw().OpenStored(bg, name, found); err != nil {
		t.Errorf("OpenStored: %v", err)
	}
	if _, err := c.Raw().Open(bg, name, found); !errors.Is(err, ErrAuthFailed) {
		t.Errorf("Open of a stored name maps it again and must not authenticate: %v", err)
	}
}

// The remaining single-key calls map the key too: Touch, SetIfPresent,
// a multi-key Delete, DeleteLocal; and an error names the key by the same
// digest KeyDigest gives for the application's key.
func TestNameKeyOtherCalls(t *testing.T) {
	t.Parallel()
	c, rdb := redisClient(t, namedOpts(testNameKey))
	storeNamed(t, c)
	if err := c.Touch(bg, emailKey, time.Hour); err != nil {
		t.Fatal(err)
	}
	if left, _ := c.TTL(bg, emailKey); left < 59*time.Minute {
		t.Errorf("Touch did not reach the opaque entry: TTL %v", left)
	}
	if ok, err := c.SetIfPresent(bg, tokenKey, "tok2", time.Minute); err != nil || !ok {
		t.Fatalf("SetIfPresent: %v, %v", ok, err)
	}
	c.DeleteLocal(tokenKey)
	if v, err := Get[string](bg, c, tokenKey); err != nil || v != "tok2" {
		t.Errorf("after DeleteLocal: %q, %v", v, err)
	}
	// A tampered entry: its error's digest is KeyDigest of the application's key.
	name := "app:" + c.Raw().StoredKey(emailKey2)
	b, _ := rdb.Get(bg, name).Bytes()
	b[len(b)-1] ^= 1
	if err := rdb.Set(bg, name, b, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	c.DeleteLocal(emailKey2)
	var ee *EntryError
	if _, err := Get[string](bg, c, emailKey2); !errors.As(err, &ee) {
		t.Errorf("tampered entry: %v", err)
	} else if ee.KeyDigest != c.KeyDigest(emailKey2) {
		t.Errorf("the error's digest %q is not KeyDigest's %q", ee.KeyDigest, c.KeyDigest(emailKey2))
	}
	if err := c.Delete(bg, emailKey, tokenKey, emailKey2); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{emailKey, tokenKey, emailKey2} {
		if n, _ := rdb.Exists(bg, "app:"+c.Raw().StoredKey(k)).Result(); n != 0 {
			t.Errorf("Delete left %q's entry", k)
		}
	}
}
