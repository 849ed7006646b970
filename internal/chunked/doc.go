// Package chunked does large memory work (copies, clears, xxHash3) in
// bounded pieces. The runtime cannot preempt a goroutine inside an assembly
// call such as memmove or xxh3's accumulate loop, so a garbage collection
// that starts during a 64 MiB copy (tens of milliseconds when the
// destination is fresh memory) waits for all of it, and so does every
// goroutine. Here a large job is a series of calls of at most Size bytes
// each; between calls the goroutine can be preempted.
//
// # Invariants
//
//   - Size is 64 KiB. Outside one-shot mode, no copy, clear or hash call
//     that Copy, Clear, XXH3 or Bytes makes is given more than Size bytes:
//     an input of at most Size goes to the built-in (or xxh3.Hash) whole,
//     a larger one in pieces of at most Size.
//   - Append, AppendString and Grow go by what they add (src, s, or n
//     bytes of room). Adding more than Size, their copies (of src, and of
//     dst into a fresh make when dst must grow) go in pieces of at most
//     Size; adding at most Size, they are a plain append or slices.Grow,
//     which moves all of a dst it reallocates in one call.
//   - Each function's result is its stand-in's: Copy's is copy's (dst and
//     src may overlap only when dst starts at or before src), Clear's is
//     clear's, Append's and AppendString's are append's (src must not
//     overlap dst's spare capacity), Bytes' is []byte(s)'s, XXH3's is
//     xxh3.Hash's, and Grow keeps dst's contents and leaves room for at
//     least n more bytes.
//   - Every piece these functions cut, and every Note, is reported with
//     its length to the function installed by Observe, if any; work done in
//     one call (an input of at most Size, or any input in one-shot mode) is
//     not. Observe's restore brings back the previous observer.
//   - SetOneShot(true) makes Copy, Clear, Append, Grow and XXH3 (and the
//     callers that consult OneShot: gcmchunk and LZ4 decoding) do their
//     work in one call each, reporting no piece, for the whole process,
//     until SetOneShot(false). Only tests and the server benchmark set it;
//     no library code does.
//   - At most n jobs of at least the large size hold a Slots slot at once
//     (n as NewSlots resolved it); a smaller job, or any job on a nil
//     *Slots, takes none. Enter returns held true only with a slot taken;
//     its caller gives it back with one Leave(true).
//   - The package imports nothing of this module.
package chunked
