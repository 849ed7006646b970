// Package names maps a cache client's application keys to opaque Redis key
// names under a name key, so that Redis (and whoever can SCAN it: a
// replica, a backup, a monitoring tool, a managed service's operator)
// learns no identifier a key carries.
//
// # The mapping
//
// A key's stored name is the client's key prefix, kept readable (scoping,
// tracking prefixes, ACL key patterns and pattern flushes rely on it),
// followed by its local name: the first 128 bits of HMAC-SHA-256 under the
// name key of a domain byte, the tenant, the prefix and the key, in
// base64url without padding (22 bytes). A key with a Redis hash tag (the
// first '{', the first '}' after it, a non-empty text between them) gets
// the local name "{" + T + "}" + H, where T is the same function of the
// tag alone (a different domain byte) and H that of the whole key, so keys
// that share a tag share a Cluster slot. Equal tags therefore show as equal
// opaque tags: Redis learns which keys share a tag, never the tag. The
// prefix is kept as it is: a complete hash tag in it still decides the
// slot of every key.
//
// # Invariants
//
//   - Local names are deterministic: every process with the same name key,
//     tenant and prefix computes the same name for a key. They are
//     independent of the master key, so a master-key rotation moves no
//     entry.
//   - A local name is made of base64url characters and, for a tagged key,
//     one '{' and one '}'; it never contains ':', and depends on the key
//     only through the HMAC. The exceptions are the empty key, which maps
//     to itself, and Invalid, the name of every key that is not valid
//     UTF-8: a client refuses both, so nothing is stored under them.
//   - Local never fails and allocates only on a memo miss; a memo hit (the
//     steady state of a hot key) is one maphash of the key, one atomic load
//     and one string comparison.
//   - The memo is bounded (a fixed number of slots, each holding at most one
//     key and its name, in one pointer-free allocation) and lossy: a key
//     enters its slot at its second miss in a row there (a key named once
//     allocates nothing in the memo), and a colliding key costs an HMAC,
//     never a wrong name.
//   - Fingerprint is a keyed function of the name key alone: it identifies
//     the key in Redis (the client's marker) without revealing it.
//
// # Key material
//
// New copies the name key into the HMAC states it pools, which live as long
// as the Namer (crypto/hmac cannot wipe its pads): the garbage collector
// reclaims them with it. No error built here carries a key, a name key or
// a name.
package names
