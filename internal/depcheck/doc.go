// Package depcheck holds tests that enforce the module's dependency arrows
// (README's Layout section): protocol, encryption, l1 and l2 are leaves
// that never import each other, the internal packages need nothing of
// cachekit, and go-redis stays in l2; and, inside cachekit, that loaded
// values travel typed and entries are sealed and opened in one file. It
// has no code besides its tests; they ask `go list` for each package's
// imports, so they need the go command.
//
// # Invariants
//
// The tests fail unless all of these hold:
//
//   - protocol, encryption, l1 and l2 reach no package of this module,
//     even transitively, except their own internal packages and
//     internal/stripe, internal/ctxwait, internal/gcmchunk and
//     internal/chunked.
//   - cachekit depends on each of the four leaves.
//   - protocol reaches neither go-redis, ristretto nor msgpack;
//     encryption neither go-redis, ristretto nor lz4; l1 not go-redis; l2
//     not ristretto (all transitively).
//   - l1 and l2 import neither crypto/aes nor crypto/cipher themselves,
//     and cmd/cachekit does not import go-redis itself.
//   - Of cachekit's files only options.go imports go-redis, and no
//     package under internal/ or cachekit/internal/ (the test harnesses
//     redistest and seam aside) imports go-redis or cachekit.
//   - cachekit/internal/codec reaches neither cachekit, encryption, l1,
//     l2, go-redis nor ristretto, even transitively.
//   - Collapsed to the top-level directories (cachekit with its
//     internal/, the root internal/, l1, l2, protocol, encryption, cmd,
//     examples), the import graph has no cycle, and the root internal/
//     imports no public package.
//   - Inside cachekit (read with go/ast): the load wing (loader.go,
//     lease.go, landing.go, mloader.go, swr.go) returns no any, has no
//     struct field of type any and no map of anys, and its one any, the
//     flight's value, says so on its line; only loadStep and loadMany run
//     a loader, and only result makes a load's result; only entry.go
//     (and client.go's L1 config, for l2.IsNegative) names the negative
//     entry's head, calls AES-GCM, or defines sealNegative and
//     openNegative.
package depcheck
