package cachekit

import (
	"context"
	"encoding/hex"
	"log/slog"
	"time"

	"golang.org/x/crypto/blake2b"

	"github.com/cachekit-io/cachekit-go/l2"
)

// warnInterval bounds how often a Client logs a warning: at most one per
// interval, so a broken Redis or a flood of tampered entries cannot flood
// the log.
const warnInterval = 10 * time.Second

// warn logs a rate-limited warning. It names the key only by digest and the
// error only by its message, which by construction holds no key material,
// plaintext or raw key. An empty key logs no digest (a warning about no
// particular key).
func (c *Client) warn(msg, key string, err error) {
	now := c.now().UnixNano()
	last := c.lastWarn.Load()
	if last != 0 && now-last < int64(warnInterval) {
		return
	}
	if !c.lastWarn.CompareAndSwap(last, now) {
		return
	}
	if key == "" {
		c.log.LogAttrs(context.Background(), slog.LevelWarn, "cachekit: "+msg, slog.String("error", err.Error()))
		return
	}
	c.log.LogAttrs(context.Background(), slog.LevelWarn, "cachekit: "+msg,
		slog.String("key_digest", c.keyDigest(key)), slog.String("error", err.Error()))
}

// keyDigest is what logs and errors show instead of a cache key: the first
// 8 bytes of BLAKE2b-256 of the full Redis key, in hex.
func (c *Client) keyDigest(key string) string {
	return KeyDigest(c.fullKey(key))
}

// KeyDigest returns the short digest this package logs in place of a full
// Redis key: hex of the first 8 bytes of its BLAKE2b-256. Operators can
// compute it for a key they know to find it in logs.
func KeyDigest(fullKey string) string {
	sum := blake2b.Sum256([]byte(fullKey))
	return hex.EncodeToString(sum[:8])
}

// DiscardRedisDriverLogs silences go-redis's process-wide internal logger
// (connection-pool messages). New already routes those lines to
// Options.Logger at debug level; call this after New for programs that want
// none at all (a command-line tool with a one-line-error contract). It
// affects every go-redis client in the process; the Client's own warnings
// still go to Options.Logger.
func DiscardRedisDriverLogs() { l2.DiscardDriverLogs() }
