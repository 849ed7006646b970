// Package redistest starts private redis-server processes for tests: a real
// server on 127.0.0.1, on a port picked by the harness, in a temporary
// directory, stopped when the test ends. It also builds clusters and
// Sentinel deployments of such servers, and offers a fault-injecting TCP
// proxy (Proxy), a go-redis hook that holds one command (Hold) and a RESP
// fake (Fake) for reply shapes no redis-server configuration gives (the
// errors of managed services). It is test support, not public API.
//
// redis-server must be on PATH (.ci/run installs Debian's package when it is
// missing). Under `go test -short` tests that need it are skipped.
//
// # Invariants
//
//   - Skipping: Start, StartArgs, StartCluster, StartClusterReplicas,
//     StartSentinel and StartSentinelN skip the test under -short before
//     starting any process. Without -short, a redis-server missing from
//     PATH fails the test; it is not skipped. StartProxy, StartFake,
//     NewHold and NewHoldBefore need no redis-server and do not skip.
//   - Ports: each server's port is one the kernel handed out on 127.0.0.1
//     (listen on port 0, then close), and the harness hands no port out
//     twice in one test process, so no other server it starts takes a
//     stopped server's port before its Restart. A cluster node's port p
//     also has p+10000, its bus port, free when picked and reserved the
//     same way. A server that exits or does not answer PING with +PONG
//     within 5 s is killed and started again on a new port; after three
//     attempts the test fails with its redis.log. Restart fails the test
//     rather than move to another port.
//   - Directories: each server runs in its own tb.TempDir(), which holds
//     its redis.log, any dump.rdb (and a cluster node's nodes.conf, a
//     sentinel's sentinel.conf). Servers bind 127.0.0.1 in protected mode,
//     with --save "" and --appendonly no: no periodic snapshot, no AOF.
//     Stop sends SHUTDOWN SAVE (and kills the process if that command
//     fails), so Restart brings the same keys back.
//   - Cleanup: every server registers a tb.Cleanup that resumes it if
//     paused and kills it (SIGKILL), then waits up to 5 s for its port to
//     close; its temporary directory is removed after that. Kill and Stop
//     are idempotent. A Proxy's cleanup closes its listener and every
//     connection and returns only once all its goroutines have ended.
//   - Bounded waits: every wait for a server (readiness, shutdown, a
//     cluster agreeing, replicas catching up, sentinels failing over) has a
//     time limit; past it the test fails, except the wait for a port to
//     close, which gives up quietly. Do, DoBulk and the harness's other
//     commands each use a fresh connection with a 1 s dial timeout and a
//     2 s deadline.
//   - A Hold holds at most one command, the first that matches, until
//     Release, which is idempotent.
package redistest
