// Package l2 is CacheKit's shared cache tier: the Redis commands the client
// needs, on top of go-redis v9. It is the only package of the module that
// sends commands to Redis and reads go-redis's replies and errors (cachekit
// names go-redis only for the client type of Options.Redis).
//
// # What it stores
//
// Values are opaque bytes. The CacheKit client hands l2 what its mode
// stores under full protocol keys: AES-256-GCM ciphertext of the ByteStorage
// envelope with encryption on, the envelope or plain msgpack without it (then
// Redis can read the values), so what Redis holds is the same for every
// CacheKit SDK in the same mode. Every write
// carries a TTL, sent as SET ... PX in milliseconds; l2 never writes a key
// without an expiry.
//
// # Round trips
//
// Get and Set are one command each (GetUpTo a GETRANGE of at most
// LongRead bytes, and for a longer value STRLEN, then GetLongUpTo); Delete, Exists and TTL
// pipeline a placeholder probe (a lease, a negative entry: STRLEN and
// GETRANGE 0 11) beside their command. GetWithTTL pipelines GET and
// PTTL. MGet pipelines an MGET and an EXISTS of the keys on a
// standalone server; on a *redis.ClusterClient the keys are grouped by hash
// slot (CRC16 of the hash tag, as Redis Cluster places them) and one MGET and
// one EXISTS per slot go out in one pipeline. MGetWithTTL adds one PTTL per
// key to the standalone pipeline; on a cluster it sends one GET+PTTL script
// per slot. When EXISTS counts more keys than MGET returned values (a key of
// another Redis type, which MGET reads as missing), a second round trip asks
// the TYPE of the keys read as missing. MSet pipelines SET PX per item.
// TryLock pipelines SET NX PX and a GET; Unlock is a compare-and-delete Lua
// script. A Store that announces writes (AnnounceWrites) adds no round
// trip on a standalone server: the PUBLISHes ride in the write's pipeline
// or script. On the auto-pipelined stream (AutoPipeline) the commands of one
// single-key call are submitted in order but may run in consecutive batches,
// with other connections' commands between them; sent directly, they are one
// pipeline.
//
// # Tracking
//
// Track keeps one connection of its own per node (the client's node; the
// master a failover client's Sentinel names, re-resolved every second; every
// master of a cluster, re-read every second; every shard of a ring) in
// broadcasting CLIENT TRACKING mode for a key prefix, redirected to itself
// and subscribed to __redis__:invalidate, and reports every key Redis says
// was written, deleted, expired or evicted. It pings a quiet connection
// every 250 ms and reports the Tracker down when a node's connection fails
// or stays silent for 1 s, and up again once every node is tracked. A
// node that refuses tracking (ErrRefused: an ACL, a managed service
// without CLIENT) is told apart from one that cannot be reached.
//
// # Announcements and the fallback
//
// A Store made to AnnounceWrites publishes "ck1 <source> <key>" on a
// channel with every write that changes a value; Subscribe hears the other
// Stores' announcements. The state machine that picks between them (tracking
// while Redis allows it, else a subscription to the announcements, else
// nothing but the copies' bounded lifetime) is the client's, above this
// package (cachekit/internal/coherence).
//
// # Fences
//
// Fence watches the client's connections: each reports its Redis client ID
// from its HELLO reply, and one that fails while a request may be on its
// way is killed by Redis (CLIENT KILL ID, on a connection of its own)
// before this Store sends anything more to that server, so a write
// abandoned on it cannot land after a later one. The *BackendError of such
// a write matches ErrOutcomeUnknown. FenceStats.On reports whether fences work
// (a server that refuses CLIENT KILL, or gives no ID, turns it off, as does
// a connection dialed before Fence that is still open). A client that
// retries on its own (MaxRetries > 0) never resends the Store's writes:
// they are marked NoRetry (once.go).
//
// # Errors
//
// A missing key is ErrNotFound (go-redis's redis.Nil). Every other failure of
// Redis, the network or the context is a *BackendError{Op, Err}; errors.Is
// still finds context.Canceled or context.DeadlineExceeded through it. Caller
// mistakes are sentinels: ErrInvalidTTL, ErrInvalidURL, ErrClosed. Error
// messages never contain keys or values: a message says what the cause is
// (a Redis reply's code in l2's own words, a network or context error's own
// text, or only the type of anything else), never what the request carried,
// and Open never repeats the URL (it may hold a password).
//
// # Ownership
//
// A Store does not own its go-redis client: Store.Close only stops the Store,
// and the client must be closed by whoever created it (Open's caller,
// typically). Byte slices returned by Get, GetWithTTL and MGet belong to the
// caller; slices passed to Set and MSet are only read.
package l2
