// Package lz4block is the LZ4 block codec behind the ByteStorage envelope
// of package protocol, which frames its blocks and owns the choice of
// writer:
//
//   - Compress writes one block for an input of up to MaxCompressLen bytes,
//     with a match finder and hash table sized to the input;
//   - PutLiterals writes an input of any size as one literals-only block;
//   - Decompress decodes one block, copying a literals-only block itself,
//     decoding into an output larger than chunked.Size in Go, in bounded
//     pieces, and handing every other block to pierrec/lz4's decoder.
//
// Every go test compresses a committed corpus with Compress and requires
// the blocks that the reference C liblz4 decoded back to their inputs when
// the corpus was generated (testdata/README.md).
package lz4block
