package cachekit

import (
	"bytes"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
)

// testKey is a fixed 32-byte master key for tests (never a real key).
var testKey = bytes.Repeat([]byte{0x42}, 32)

func encConfig(tenant string) *encryption.Config {
	return &encryption.Config{MasterKey: append([]byte(nil), testKey...), Tenant: tenant}
}

// withRedis starts a private redis-server and returns it with a client the
// test owns (closed at cleanup).
func withRedis(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = rdb.Close() })
	return srv, rdb
}

// noAutoPipeline turns auto-pipelining off for every Client newClient
// makes (CACHEKIT_TEST_AUTOPIPELINE=0), to run the suite without it.
var noAutoPipeline = os.Getenv("CACHEKIT_TEST_AUTOPIPELINE") == "0"

func newClient(t testing.TB, opts Options) *Client {
	t.Helper()
	opts.DisableAutoPipeline = opts.DisableAutoPipeline || noAutoPipeline
	if opts.bareBound == 0 {
		opts.bareBound = testBareBound
	}
	c, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// modes is the matrix most behaviour tests run over.
func modes() map[string]Options {
	return map[string]Options{
		"plain":              {L1MaxBytes: 1 << 20},
		"plain/nocompress":   {L1MaxBytes: 1 << 20, DisableCompression: true},
		"encrypted":          {L1MaxBytes: 1 << 20, Encryption: encConfig("")},
		"encrypted/nocompr":  {L1MaxBytes: 1 << 20, Encryption: encConfig(""), DisableCompression: true},
		"encrypted/noL1":     {Encryption: encConfig("")},
		"encrypted/prefixed": {L1MaxBytes: 1 << 20, Encryption: encConfig("t1"), KeyPrefix: "app:"},
		"encrypted/named":    namedOpts(testNameKey),
	}
}

var bg = context.Background()

// mustSet writes key=v through c and stops the test if the write fails.
func mustSet(t testing.TB, c *Client, key string, v any) {
	t.Helper()
	if err := c.Set(bg, key, v); err != nil {
		t.Fatal(err)
	}
}

// mustSetTTL is mustSet with an explicit TTL.
func mustSetTTL(t testing.TB, c *Client, key string, v any, ttl time.Duration) {
	t.Helper()
	if err := c.SetWithTTL(bg, key, v, ttl); err != nil {
		t.Fatal(err)
	}
}

// redisClient starts a private redis-server (withRedis) and returns a Client
// built from opts with opts.Redis set to it, and the test's own client of
// that server.
func redisClient(t *testing.T, opts Options) (*Client, *redis.Client) {
	t.Helper()
	_, rdb := withRedis(t)
	opts.Redis = rdb
	return newClient(t, opts), rdb
}

// sessionKey is a 25-byte key, a session store's shape.
func sessionKey(i int) string {
	s := strconv.Itoa(i)
	return "session:" + strings.Repeat("0", 17-len(s)) + s
}

// value32 is a 32-byte value, a session token's size.
var value32 = strings.Repeat("v", 32)
