// Package gcmchunk seals and opens AES-GCM messages in bounded chunks, so
// that no single non-preemptible assembly call is given more than one chunk
// of a large value, with output byte-identical to crypto/cipher.NewGCM's
// (12-byte nonce, 16-byte tag).
//
// crypto/cipher's GCM encrypts and authenticates the whole message in one
// assembly call. The Go runtime cannot preempt a goroutine inside it, so a
// garbage collection that starts during the call waits for it, and so does
// every other goroutine: tens of milliseconds for a 64 MiB value. Here the
// keystream comes from crypto/cipher's CTR mode (the counter GCM uses,
// starting at nonce‖2), and GHASH is computed chunk by chunk with the
// standard library's own implementation: GCM's Seal of an empty plaintext
// with a chunk as its additional data returns
//
//	E_K(J0') ⊕ (S ⊕ L')·H
//
// where S is the GHASH state after the chunk's blocks, L' the chunk's length
// block and H the hash key. E_K(J0') (one block encryption of the nonce
// used) and L'·H are known, so S·H is too, and the chunks combine by
// linearity: with Z the state after the blocks so far times H, a chunk of n
// blocks gives Z·H^n ⊕ S·H. The tag is E_K(J0) ⊕ Z ⊕ L·H. The few products
// in GF(2^128) run in constant-time Go.
//
// # Invariants
//
//   - Byte identity: for the same key, nonce, plaintext and additional
//     data, Seal returns the bytes cipher.NewGCM(block).Seal returns, and
//     Open accepts exactly what crypto/cipher's Open accepts and returns
//     the same plaintext. The tests check every length up to 4 KiB,
//     Wycheproof's AES-256-GCM cases and a fuzz target against
//     crypto/cipher.
//   - Bounded chunks: outside chunked's one-shot mode, each call into
//     crypto/cipher over the message (the CTR keystream, a chunk's GHASH)
//     is given at most Chunk() bytes, and each chunk is reported to
//     chunked.Note. The additional data is hashed in one call, whatever its
//     length.
//   - Open authenticates before it decrypts: a tag that does not match, or
//     sealed shorter than TagSize, gives nil and ErrOpen, and outside
//     one-shot mode nothing has been written into dst.
//   - New accepts only a 16-byte block cipher, a GCM with a 12-byte nonce
//     and a 16-byte tag, and a chunk that is a positive multiple of 16.
//     Seal and Open panic on a nonce of any other length.
//   - mul, the field product, has no branch or index that depends on its
//     operands; pow branches only on its exponent, a public block count.
//   - New sets every field of an AEAD; Seal and Open write none of them.
//   - Under chunked.SetOneShot(true), Seal and Open hand the whole message
//     to crypto/cipher's GCM in one call.
package gcmchunk
