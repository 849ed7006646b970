#!/usr/bin/python3
"""Regenerate testdata/corpus: blocks written by this package, decoded by C liblz4.

Run from anywhere, with Debian's python3-lz4 (the Python binding of the
reference C liblz4; `apt-get install python3-lz4`):

    /usr/bin/python3 protocol/internal/lz4block/testdata/gen_corpus.py

1. `go test -run '^TestCorpusDecodedByCLiblz4$' -args -corpus.write=DIR`
   writes every recipe of corpus_test.go to DIR: NAME.in (the input) and
   NAME.lz4 (the block its writer makes of it).
2. C liblz4 decodes each NAME.lz4 (lz4.block.decompress, which calls
   LZ4_decompress_safe) and the result must equal NAME.in byte for byte.
   The binding returns fewer bytes than uncompressed_size without an error
   when a block is short, so the comparison is what decides. Any mismatch
   stops the script before it writes anything.
3. C liblz4 also compresses each input (LZ4_compress_default), and decodes
   its own block as a sanity check; the Go tests decode those blocks too.
4. testdata/corpus is replaced: manifest.json (versions, lengths, SHA-256
   of every input and block), the inputs and blocks that are small enough
   to commit (see the limits below), nothing else. Large inputs are remade
   by their Go recipes at test time and checked against the SHA-256.
"""

import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import lz4
import lz4.block

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.dirname(HERE)
CORPUS = os.path.join(HERE, "corpus")

# What is committed: inputs of at most INPUT_MAX bytes, our blocks of at
# most BLOCK_MAX bytes and liblz4's of at most C_BLOCK_MAX. The rest is
# named by SHA-256 only.
INPUT_MAX = 16 << 10
BLOCK_MAX = 72 << 10
C_BLOCK_MAX = 24 << 10


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def c_decode(block, n):
    out = lz4.block.decompress(block, uncompressed_size=n)
    return bytes(out)


def debian_version(pkg):
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def main():
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["go", "test", "-count=1", "-run", "^TestCorpusDecodedByCLiblz4$", ".",
                        "-args", "-corpus.write=" + tmp], cwd=PKG, check=True)
        with open(os.path.join(tmp, "recipes.json")) as f:
            recipes = json.load(f)
        if not recipes:
            sys.exit("no recipes written")

        entries, files = [], {}
        for r in recipes:
            name, writer = r["name"], r["writer"]
            with open(os.path.join(tmp, name + ".in"), "rb") as f:
                data = f.read()
            with open(os.path.join(tmp, name + ".lz4"), "rb") as f:
                block = f.read()
            got = c_decode(block, len(data))
            if got != data:
                sys.exit("%s: liblz4 decodes our %d-byte block to %d bytes that differ from the %d-byte input"
                         % (name, len(block), len(got), len(data)))
            cblock = lz4.block.compress(data, mode="default", store_size=False)
            if c_decode(cblock, len(data)) != data:
                sys.exit("%s: liblz4 does not read its own block back" % name)
            e = {
                "name": name,
                "writer": writer,
                "input_len": len(data),
                "input_sha256": sha256(data),
                "input_file": "",
                "block_len": len(block),
                "block_sha256": sha256(block),
                "block_file": "",
                "c_block_len": len(cblock),
                "c_block_sha256": sha256(cblock),
                "c_block_file": "",
            }
            if len(data) <= INPUT_MAX:
                e["input_file"] = name + ".in"
                files[e["input_file"]] = data
            if len(block) <= BLOCK_MAX:
                e["block_file"] = name + ".lz4"
                files[e["block_file"]] = block
            # liblz4's blocks are a check on the decoder only: commit the
            # small ones (which leaves out those of 64 KiB of noise).
            if len(cblock) <= C_BLOCK_MAX:
                e["c_block_file"] = name + ".c.lz4"
                files[e["c_block_file"]] = cblock
            entries.append(e)
            print("%-26s %-11s input %7d  block %7d  liblz4 block %7d  decoded by liblz4: equal"
                  % (name, writer, len(data), len(block), len(cblock)))

    manifest = {
        "note": "Every block_sha256 is a block that the entry's writer (lz4block.Compress or "
                "lz4block.PutLiterals, or pierrec/lz4 as protocol.SealEnvelope uses it above 64 KiB) "
                "made of the input and that C liblz4 decoded back to it (LZ4_decompress_safe via "
                "python3-lz4's lz4.block.decompress); c_block_* is liblz4's own block of the input "
                "(LZ4_compress_default). Generated by testdata/gen_corpus.py; see testdata/README.md.",
        "liblz4_version": lz4.library_version_string(),
        "python_lz4_version": lz4.__version__,
        "debian_packages": {
            "python3-lz4": debian_version("python3-lz4"),
            "liblz4-1": debian_version("liblz4-1"),
        },
        "entries": entries,
    }
    os.makedirs(CORPUS, exist_ok=True)
    for old in glob.glob(os.path.join(CORPUS, "*")):
        os.remove(old)
    for name, b in files.items():
        with open(os.path.join(CORPUS, name), "wb") as f:
            f.write(b)
    with open(os.path.join(CORPUS, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(CORPUS, "*")))
    print("%d entries, %d files, %d bytes in %s (liblz4 %s, python3-lz4 %s)"
          % (len(entries), len(files) + 1, total, CORPUS, manifest["liblz4_version"], manifest["python_lz4_version"]))


if __name__ == "__main__":
    main()
