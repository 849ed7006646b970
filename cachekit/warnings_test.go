package cachekit

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/cachekit-io/cachekit-go/encryption"
	"github.com/cachekit-io/cachekit-go/internal/redistest"
	"github.com/cachekit-io/cachekit-go/internal/testwait"
)

// Text a hostile or careless error carries: the full cache key, a fragment
// of it, and an unrelated secret.
const (
	leakKey      = "user:4242-abcdef"
	leakFragment = "4242-abcdef"
	leakSecret   = "s3cr3t-token-XYZ"
)

// leakyErr is an error built the way loaders and providers build them: the
// key and a secret formatted into the text.
func leakyErr() error {
	return fmt.Errorf("lookup of %s failed (id %s, token %s)", leakKey, leakFragment, leakSecret)
}

// leakyValue fails to encode with a leaky error.
type leakyValue struct{}

func (leakyValue) EncodeMsgpack(*msgpack.Encoder) error { return leakyErr() }

// capture is an Options.Logger whose text can be read back.
type capture struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (c *capture) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(lockedWriter{&c.mu, &c.buf}, nil))
}

func (c *capture) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// checkWarning fails t unless logs hold a warning named msg that carries
// the key's digest, the error class and Go type, and none of the error's
// text.
func checkWarning(t *testing.T, c *Client, logs, msg, class string) {
	t.Helper()
	if !strings.Contains(logs, msg) {
		t.Fatalf("no %q warning in %q", msg, logs)
	}
	for _, leak := range []string{leakKey, leakFragment, leakSecret, "lookup of"} {
		if strings.Contains(logs, leak) {
			t.Errorf("a warning carries text of the error (%q)", leak)
		}
	}
	for _, want := range []string{"key_digest=" + c.KeyDigest(leakKey), "error.type=" + class, "error.go_type="} {
		if !strings.Contains(logs, want) {
			t.Errorf("the warning lacks %q: %q", want, logs)
		}
	}
}

// TestWarningsCarryNoErrorText: a loader's error (SWR refresh), a value's
// marshaller error and a KeyProvider's error (a load's store) never reach
// a warning as text: the warning names the operation, the error's class,
// its Go type and the key's digest.
func TestWarningsCarryNoErrorText(t *testing.T) {
	t.Parallel()
	t.Run("swr-loader", func(t *testing.T) {
		t.Parallel()
		var logs capture
		c, clk := swrClient(t, func(o *Options) { o.Logger = logs.logger() })
		calls := 0
		var mu sync.Mutex
		load := func(context.Context) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			if calls++; calls > 1 {
				return "", leakyErr()
			}
			return "v", nil
		}
		if _, err := GetOrLoadTTL(bg, c, leakKey, swrTTL, load); err != nil {
			t.Fatal(err)
		}
		clk.Add(swrDue)
		if _, err := GetOrLoadTTL(bg, c, leakKey, swrTTL, load); err != nil {
			t.Fatal(err)
		}
		testwait.Until(5*time.Second, func() bool { return strings.Contains(logs.String(), "SWR refresh failed") })
		checkWarning(t, c, logs.String(), "SWR refresh failed", "other")
	})
	t.Run("store-marshaller", func(t *testing.T) {
		t.Parallel()
		var logs capture
		c, _ := redisClient(t, Options{L1MaxBytes: 1 << 20, Logger: logs.logger()})
		_, err := GetOrLoad(bg, c, leakKey, func(context.Context) (leakyValue, error) { return leakyValue{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		checkWarning(t, c, logs.String(), "a load could not store", "other")
	})
	t.Run("store-keyprovider", func(t *testing.T) {
		t.Parallel()
		var logs capture
		_, rdb := withRedis(t)
		provider := func(context.Context) (encryption.Keys, error) { return encryption.Keys{}, leakyErr() }
		c := newClient(t, Options{Redis: rdb, L1MaxBytes: 1 << 20, Logger: logs.logger(),
			Encryption: &encryption.Config{Provider: provider}})
		// The read misses without the keys; the store meets the provider.
		if _, err := GetOrLoad(bg, c, leakKey, func(context.Context) (string, error) { return "v", nil }); err != nil {
			t.Fatal(err)
		}
		checkWarning(t, c, logs.String(), "a load could not store", "key_provider")
	})
}

// TestInjectedClientWithoutContextTimeoutWarned: New warns when an injected
// go-redis client ignores ctx deadlines, and not when it honours them.
func TestInjectedClientWithoutContextTimeoutWarned(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, enabled := range []bool{false, true} {
		var logs capture
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: enabled})
		t.Cleanup(func() { _ = rdb.Close() })
		newClient(t, Options{Redis: rdb, Logger: logs.logger()})
		if warned := strings.Contains(logs.String(), "ContextTimeoutEnabled off"); warned == enabled {
			t.Errorf("ContextTimeoutEnabled %v: warned %v", enabled, warned)
		}
	}
}
