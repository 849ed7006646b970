package cachekit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

// withMiniredis returns a Client on an in-memory Redis (examples only;
// the tests use real redis-server processes).
func withMiniredis(opts cachekit.Options) (*cachekit.Client, *miniredis.Miniredis) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	opts.RedisURL = "redis://" + mr.Addr()
	client, err := cachekit.New(opts)
	if err != nil {
		panic(err)
	}
	return client, mr
}

// MGetOrLoad reads every key in one round trip and loads all the misses
// with one call of the loader (one database query instead of N).
func ExampleMGetOrLoad() {
	client, mr := withMiniredis(cachekit.Minimal())
	defer mr.Close()
	defer client.Close()
	ctx := context.Background()
	_ = client.Set(ctx, "user:1", "Ada")

	loadUsers := func(ctx context.Context, missing []string) (map[string]string, error) {
		fmt.Println("loading", missing)
		names := map[string]string{"user:2": "Grace", "user:3": "Edsger"}
		out := map[string]string{}
		for _, k := range missing {
			if n, ok := names[k]; ok { // user:4 does not exist: left out, not cached
				out[k] = n
			}
		}
		return out, nil
	}
	users, err := cachekit.MGetOrLoad(ctx, client, []string{"user:1", "user:2", "user:3", "user:4"}, loadUsers)
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range users {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range keys {
		fmt.Println(k, users[k])
	}
	fmt.Println(err)
	// Output:
	// loading [user:2 user:3 user:4]
	// user:1 Ada
	// user:2 Grace
	// user:3 Edsger
	// <nil>
}

// NegativeTTL caches a loader's "not found": the next GetOrLoad answers
// from the cache (a *NegativeHitError, which matches ErrNotFound) without
// asking the database, until the TTL ends or a write of the key replaces it.
func ExampleOptions_negativeTTL() {
	opts := cachekit.Minimal()
	opts.NegativeTTL = 30 * time.Second
	client, mr := withMiniredis(opts)
	defer mr.Close()
	defer client.Close()
	ctx := context.Background()
	lookups := 0
	findUser := func(context.Context) (string, error) {
		lookups++
		return "", cachekit.ErrNotFound // no such user in the database
	}
	for range 3 {
		_, err := cachekit.GetOrLoad(ctx, client, "user:404", findUser)
		var hit *cachekit.NegativeHitError
		fmt.Println(errors.Is(err, cachekit.ErrNotFound), errors.As(err, &hit))
	}
	_ = client.Set(ctx, "user:404", "Barbara") // the user signs up
	name, err := cachekit.GetOrLoad(ctx, client, "user:404", findUser)
	fmt.Println(name, err, "lookups:", lookups)
	// Output:
	// true false
	// true true
	// true true
	// Barbara <nil> lookups: 1
}

// SetIfAbsent stores only when the key is not cached: an idempotency
// marker, a first-writer-wins claim.
func ExampleClient_SetIfAbsent() {
	client, mr := withMiniredis(cachekit.Minimal())
	defer mr.Close()
	defer client.Close()
	ctx := context.Background()
	first, _ := client.SetIfAbsent(ctx, "payment:7f3e", "worker-a", time.Minute)
	second, _ := client.SetIfAbsent(ctx, "payment:7f3e", "worker-b", time.Minute)
	owner, _ := cachekit.Get[string](ctx, client, "payment:7f3e")
	fmt.Println(first, second, owner)
	// Output: true false worker-a
}

// AutoKey derives the protocol's auto-mode key for a call (the key
// cachekit-py's decorator derives with the same settings): here, caching a
// function's results by its arguments. Auto-mode keys are SDK-internal;
// values shared across SDKs use interop keys.
func ExampleAutoKey() {
	key, err := cachekit.AutoKey("billing", "example.com/billing.InvoiceTotal", int64(42), "EUR")
	fmt.Println(key, err)
	// Output: ns:billing:func:example.com/billing.InvoiceTotal:args:dc7ca7765cfaddfeeab1fb733ccc850aaae7a1a384a4c4af15b2190e247f510c:1s <nil>
}

// Secure takes the master key from the environment (CACHEKIT_MASTER_KEY,
// and CACHEKIT_PREVIOUS_MASTER_KEYS during a rotation) and refuses to run
// without one: it never falls back to plaintext.
// It shows PRE-20, PRE-21 and PRE-50.
func ExampleSecure() {
	os.Unsetenv(cachekit.MasterKeyEnv)
	_, err := cachekit.Secure("")
	fmt.Println(errors.Is(err, cachekit.ErrConfig))

	// In a deployment the secret store sets this; a fixed, public key here.
	os.Setenv(cachekit.MasterKeyEnv, "4242424242424242424242424242424242424242424242424242424242424242")
	defer os.Unsetenv(cachekit.MasterKeyEnv)
	opts, err := cachekit.Secure("")
	if err != nil {
		panic(err)
	}
	client, mr := withMiniredis(opts)
	defer mr.Close()
	defer client.Close()
	ctx := context.Background()
	_ = client.Set(ctx, "token:9", "s3cr3t")
	stored := []byte(mr.Dump())
	fmt.Println(client.Encrypted(), bytes.Contains(stored, []byte("s3cr3t")))
	// Output:
	// true
	// true false
}

// Errors to branch on: a miss, an entry that does not open (tampered,
// wrong key), Redis failing, and Redis failing under FailOpen.
func Example_errors() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	opts := cachekit.Minimal()
	opts.RedisURL = "redis://" + mr.Addr()
	opts.Encryption = &encryption.Config{MasterKey: bytes.Repeat([]byte{0x42}, 32)}
	opts.Logger = slog.New(slog.DiscardHandler) // the warnings would go to stderr
	strict, _ := cachekit.New(opts)             // Minimal: Redis errors are returned
	defer strict.Close()
	ctx := context.Background()

	_, err := cachekit.Get[string](ctx, strict, "nope")
	fmt.Println("miss:", errors.Is(err, cachekit.ErrNotFound))

	_ = mr.Set("forged", "not a ciphertext anyone sealed")
	_, err = cachekit.Get[string](ctx, strict, "forged")
	var ee *cachekit.EntryError
	fmt.Println("tampered:", errors.As(err, &ee), ee != nil && ee.Tier == cachekit.TierL2)

	mr.Close() // Redis goes away
	_, err = cachekit.Get[string](ctx, strict, "nope")
	var be *cachekit.BackendError
	fmt.Println("redis down:", errors.As(err, &be))

	failOpen := opts
	failOpen.Reliability = &cachekit.Reliability{FailOpen: true}
	lenient, _ := cachekit.New(failOpen)
	defer lenient.Close()
	_, err = cachekit.Get[string](ctx, lenient, "nope")
	var me *cachekit.MissError
	fmt.Println("redis down, FailOpen:", errors.As(err, &me), errors.Is(err, cachekit.ErrNotFound))
	// Output:
	// miss: true
	// tampered: true true
	// redis down: true
	// redis down, FailOpen: true true
}

// Inject a go-redis client tuned for your deployment (pool size, timeouts,
// TLS, a Cluster or Sentinel client); the cache's own deadlines still
// bound every operation.
func ExampleOptions_redis() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{
		Addr:         mr.Addr(),
		PoolSize:     32,
		MinIdleConns: 4,
		ReadTimeout:  300 * time.Millisecond,
		WriteTimeout: 300 * time.Millisecond,
	})
	defer rdb.Close() // the Client does not close an injected client

	opts := cachekit.Minimal()
	opts.Redis = rdb
	client, err := cachekit.New(opts)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	_ = client.Set(context.Background(), "k", 1)
	fmt.Println(mr.Exists("k"))
	// Output: true
}

// Types already tagged for JSON need no msgpack tags with StructTag
// "json"; a value an operator writes as JSON with the cachekit command
// ({"id": 42, "display_name": "Ada"}) reads back into them.
func ExampleOptions_structTag() {
	type Account struct {
		ID          int64  `json:"id"`
		DisplayName string `json:"display_name"`
	}
	opts := cachekit.Minimal()
	opts.StructTag = "json"
	client, err := cachekit.New(opts)
	if err != nil {
		panic(err)
	}
	defer client.Close()
	ctx := context.Background()
	// What `cachekit set account:42 '{"id":42,"display_name":"Ada"}'` stores.
	_ = client.Set(ctx, "account:42", map[string]any{"id": 42, "display_name": "Ada"})
	a, err := cachekit.Get[Account](ctx, client, "account:42")
	fmt.Printf("%+v %v\n", a, err)
	// Output: {ID:42 DisplayName:Ada} <nil>
}
