"""The XET-GEARHASH-BLAKE3 formats as pure code: chunking, hashes, xorbs, shards, reconstructions."""
