"""Constants of the XET-GEARHASH-BLAKE3 suite and of the xorb and shard formats."""

# Content-Defined Chunking: Algorithm Parameters
TARGET_CHUNK_SIZE = 65536
MIN_CHUNK_SIZE = 8192
MAX_CHUNK_SIZE = 131072
GEAR_MASK = 0xFFFF000000000000

# Xorb Format: Size Constraints
MAX_XORB_SIZE = 64 * 1024 * 1024
# hf_xet 1.8 fills a xorb with up to 64 MiB of chunk data, so its uploads run a few KiB
# over MAX_XORB_SIZE once chunk headers are counted. Readers accept this much; writers
# (XorbBuilder) keep to MAX_XORB_SIZE.
MAX_XORB_ACCEPTED = MAX_XORB_SIZE + 1024 * 1024
MAX_XORB_CHUNKS = 8192

HASH_SIZE = 32

# Hashing Methods: keys for domain separation
DATA_KEY = bytes.fromhex("6697f5775b9550de3135cbaca597181c9de421109beb2b58b4d0b04b93adf229")
INTERNAL_NODE_KEY = bytes.fromhex(
    "017ec5c7a5472996fd946666b48a02e65ddd536f37c76dd2f86352e64a53713f"
)
ZERO_KEY = bytes(32)
VERIFICATION_KEY = bytes.fromhex("7f1857d6ce56ed66127ff913e7a5c3f3a4cd26d5b5db49e64124987f28fb94c3")

# Merkle Tree Construction: Algorithm Parameters
MEAN_BRANCHING_FACTOR = 4
MAX_CHILDREN = 2 * MEAN_BRANCHING_FACTOR + 1

# Global Deduplication: Eligibility Criteria
GLOBAL_DEDUP_MODULUS = 1024
