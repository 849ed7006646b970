package cachekit

import (
	"context"
	"log/slog"
	"time"

	"github.com/cachekit-io/cachekit-go/cachekit/internal/observe"
	"github.com/cachekit-io/cachekit-go/l2"
)

// warnInterval bounds how often a Client logs a warning: at most one per
// interval, so a broken Redis or a flood of tampered entries cannot flood
// the log.
const warnInterval = 10 * time.Second

// warn logs a rate-limited warning. It names the key only by digest and
// the error only by what it is, never by its text, which a loader, a
// KeyProvider or a value's own marshaller may have built from a key or a
// secret: the error's class (as the metrics' error.type), its Go type and
// the Go type of its innermost cause. An empty key logs no digest (a
// warning about no particular key).
func (c *Client) warn(msg, key string, err error) {
	if !c.lastWarn.Allow(c.now(), warnInterval) {
		return
	}
	attrs := make([]slog.Attr, 0, 4)
	if key != "" {
		attrs = append(attrs, slog.String("key_digest", c.keyDigest(key)))
	}
	attrs = append(attrs, observe.ErrorAttrs(err, errClasses.Class(err))...)
	c.log.LogAttrs(context.Background(), slog.LevelWarn, "cachekit: "+msg, attrs...)
}

// keyDigest is what logs and errors show instead of a cache key.
// key is a local name (see Client.local): the digest is of its Redis key.
func (c *Client) keyDigest(key string) string { return c.digest.Digest(c.fullKey(key)) }

// KeyDigest returns the short digest this Client logs (and puts in
// EntryError) in place of key's full Redis key: hex of the first 8 bytes of
// BLAKE2b-256 keyed with the Client's digest key, so a digest cannot be
// matched against guessed keys by anyone without that key.
//
// With encryption configured from a static master key, the digest key is
// derived from that key and the tenant (HKDF-SHA256, its own label): every
// process of a fleet, and the command-line tool given the same key
// (cachekit inspect --secure), names a key with the same digest. Otherwise
// (no encryption, or a KeyProvider) it is random per Client: digests
// correlate within this Client's logs only.
//
// With a name key (encryption.Config.NameKey) the digest is of the key's
// opaque Redis name, as every log line, span and error of the Client names it.
func (c *Client) KeyDigest(key string) string { return c.keyDigest(c.local(key)) }

// DiscardRedisDriverLogs silences go-redis's process-wide internal logger
// (connection-pool messages, which go-redis otherwise writes to stderr),
// for programs that want none at all (a command-line tool with a
// one-line-error contract). It affects every go-redis client in the
// process; the Client's own warnings still go to Options.Logger.
func DiscardRedisDriverLogs() { l2.DiscardDriverLogs() }

// RouteRedisDriverLogs sends go-redis's process-wide internal log lines
// (pool dial failures, reconnects) to l at debug level instead of stderr.
// New does not do it: go-redis has one logger per process, shared by every
// go-redis client in it, so routing it is the program's choice, made once
// at start-up (typically with the Logger given to Options). The last call,
// or a later redis.SetLogger or DiscardRedisDriverLogs, wins. go-redis's
// lines name addresses and errors, never keys or values.
func RouteRedisDriverLogs(l *slog.Logger) { l2.RouteDriverLogs(l) }
