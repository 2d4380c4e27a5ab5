"""XET-GEARHASH-BLAKE3 as pure code: chunking, hashes, xorbs, shards, reconstructions."""
