// Command quickstart stores and reads an encrypted session with cachekit.
//
//	go run ./examples/quickstart
//
// It runs on the in-process L1 alone; with CACHEKIT_REDIS_URL set (for
// example redis://127.0.0.1:6379/0) it uses that Redis as L2 too. The master
// key is random per run unless CACHEKIT_MASTER_KEY holds one (64 hex digits).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit"
)

// Session is the kind of record a service caches: small, sensitive.
type Session struct {
	UserID    int64     `msgpack:"user_id"`
	Email     string    `msgpack:"email"`
	Roles     []string  `msgpack:"roles"`
	ExpiresAt time.Time `msgpack:"expires_at"`
}

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run is the quickstart; the test runs it too.
func run(out io.Writer) error {
	ctx := context.Background()
	keyHex := os.Getenv(cachekit.MasterKeyEnv)
	if keyHex == "" {
		k := make([]byte, 32)
		_, _ = rand.Read(k)
		keyHex = hex.EncodeToString(k)
	}
	opts, err := cachekit.Secure(keyHex)
	if err != nil {
		return err
	}
	opts.RedisURL = os.Getenv(cachekit.RedisURLEnv)
	if opts.RedisURL == "" {
		// In-process only: stale-while-revalidate and invalidation need
		// Redis, and New refuses them without it.
		opts.SWR, opts.Invalidation = nil, nil
	}
	opts.KeyPrefix = "quickstart:"
	client, err := cachekit.New(opts)
	if err != nil {
		return err
	}
	defer client.Close()

	s := Session{UserID: 42, Email: "ada@example.com", Roles: []string{"admin"}, ExpiresAt: time.Now().Add(time.Hour).UTC()}
	if err := client.SetWithTTL(ctx, "session:abc", s, 10*time.Minute); err != nil {
		return err
	}
	got, err := cachekit.Get[Session](ctx, client, "session:abc")
	if err != nil {
		return err
	}
	tier := "L1 only"
	if opts.RedisURL != "" {
		tier = "L1 + Redis"
	}
	fmt.Fprintf(out, "mode: %s, encrypted: %v\n", tier, client.Encrypted())
	fmt.Fprintf(out, "read back: user %d (%s), roles %v\n", got.UserID, got.Email, got.Roles)
	st := client.Stats()
	fmt.Fprintf(out, "stats: L1 hits %d, encryptions %d, key fingerprint %s\n", st.L1Hits, st.Encryptions, st.KeyFingerprint)
	return nil
}
