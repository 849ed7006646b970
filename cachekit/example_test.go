package cachekit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/cachekit-io/cachekit-go/cachekit"
	"github.com/cachekit-io/cachekit-go/encryption"
)

type Session struct {
	UserID int64    `msgpack:"user_id"`
	Roles  []string `msgpack:"roles"`
}

// The quickstart of README.md: an encrypted in-process cache (add RedisURL
// or Redis to the options for the Redis tier).
func Example() {
	ctx := context.Background()
	opts := cachekit.Minimal() // in-process only; Production() once Redis is set
	// In production the key comes from a secret store or CACHEKIT_MASTER_KEY
	// (see cachekit.Secure); this fixed, public key keeps the example
	// deterministic (an all-zero key is refused as a placeholder).
	opts.Encryption = &encryption.Config{MasterKey: bytes.Repeat([]byte{0x42}, 32)}
	client, err := cachekit.New(opts)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	_ = client.Set(ctx, "session:abc", Session{UserID: 42, Roles: []string{"admin"}})
	s, err := cachekit.Get[Session](ctx, client, "session:abc")
	fmt.Println(s.UserID, s.Roles, err, client.Encrypted())

	_, err = cachekit.Get[Session](ctx, client, "session:nope")
	fmt.Println(errors.Is(err, cachekit.ErrNotFound))
	// Output:
	// 42 [admin] <nil> true
	// true
}

// GetOrLoad runs the loader once on a miss and serves the cached value
// after; the loader may choose how long its answer is cached.
func ExampleGetOrLoad() {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()

	opts := cachekit.Minimal() // DefaultTTL: 5 minutes
	opts.RedisURL = "redis://" + mr.Addr()
	client, err := cachekit.New(opts)
	if err != nil {
		panic(err)
	}
	defer client.Close()

	loads := 0
	load := func(ctx context.Context) (string, error) {
		loads++
		// The source said how long this answer holds (a Cache-Control
		// max-age, say): cache it for that, not for DefaultTTL.
		if err := cachekit.OverrideTTL(ctx, 90*time.Second); err != nil {
			return "", err
		}
		return "expensive result", nil
	}
	for range 3 {
		v, _ := cachekit.GetOrLoad(context.Background(), client, "report:2026", load)
		fmt.Println(v)
	}
	fmt.Println("loads:", loads, "ttl in redis:", mr.TTL("report:2026"))
	// Output:
	// expensive result
	// expensive result
	// expensive result
	// loads: 1 ttl in redis: 1m30s
}

// Typed views avoid repeating the type parameter.
func ExampleTyped() {
	client, _ := cachekit.New(cachekit.Minimal())
	defer client.Close()
	sessions := cachekit.NewTyped[Session](client)
	ctx := context.Background()
	_ = sessions.SetWithTTL(ctx, "s1", Session{UserID: 7}, 10*time.Minute)
	s, _ := sessions.Get(ctx, "s1")
	fmt.Println(s.UserID)
	// Output: 7
}

// A zero TTL is an error before anything is stored.
func ExampleClient_SetWithTTL() {
	client, _ := cachekit.New(cachekit.Minimal())
	defer client.Close()
	err := client.SetWithTTL(context.Background(), "k", "v", 0)
	fmt.Println(errors.Is(err, cachekit.ErrInvalidTTL))
	// Output: true
}

// Interop keys are the same in every CacheKit SDK.
func ExampleInteropKey() {
	key, _ := cachekit.InteropKey("users", "get_all")
	fmt.Println(key)
	// Output: users:get_all:8064bf5f945dba521b017bb3f32b31a293a6e16944838d171ea9e77fab085e8e
}
