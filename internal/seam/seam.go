// Package seam lets tests see, and hold, each command an l2.Store sends,
// on the goroutine of the call that sends it (before it is queued on the
// auto-pipelined stream or sent directly, and once its reply is in), which
// go-redis's hooks cannot do: they run on the pipeliner's goroutine for a
// pipelined command. l2 registers Install and its script names here when
// it is initialised; tests of l2 and cachekit (an internal package, so no
// one else) call Install on a Store and name commands with CommandName.
// Nothing here is used outside tests.
//
// # Invariants
//
//   - A Store without a hook pays one atomic load per command sent.
//   - A hook that blocks holds its caller and nothing else: the stream
//     runs on.
package seam

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Hook sees every command a Store sends (its single-key commands, on or
// off the stream): Before just before the command is queued or sent, After
// once the call has every reply, before the Store reads them.
type Hook interface {
	Before(cmd redis.Cmder)
	After(cmd redis.Cmder)
}

// Install makes h the hook of store, an *l2.Store (nil h: none). l2 sets
// it when it is initialised.
var Install func(store any, h Hook)

// scripts names l2's scripts by their SHA-1 (EVALSHA's first argument).
var scripts = map[string]string{}

// NameScript records that the script whose SHA-1 is hash (hex, as
// EVALSHA takes it) is called name (l2 names its lease scripts when it is
// initialised).
func NameScript(name, hash string) { scripts[hash] = name }

// CommandName names cmd as a test that holds one command sees it:
// go-redis's name ("get", "set", ...), or for a script l2 named
// (NameScript) that name, such as "lease.acquire" or "lease.fill". Key is
// the key it acts on (its first key), "" when it has none.
func CommandName(cmd redis.Cmder) (name, key string) {
	args := cmd.Args()
	name = cmd.Name()
	switch name {
	case "evalsha", "eval", "evalsha_ro", "eval_ro":
		if len(args) > 3 {
			key = fmt.Sprint(args[3])
		}
		if len(args) > 1 {
			id := fmt.Sprint(args[1])
			if name == "eval" || name == "eval_ro" {
				sum := sha1.Sum([]byte(id))
				id = hex.EncodeToString(sum[:])
			}
			if n, ok := scripts[id]; ok {
				name = n
			}
		}
	default:
		if len(args) > 1 {
			key = fmt.Sprint(args[1])
		}
	}
	return name, key
}
