"""XET hashes: chunk, Merkle node, xorb, file and verification hashes, and their string form."""

import struct
from array import array
from collections.abc import Iterable, Sequence
from itertools import accumulate

import blake3

from arkfs.xet import _merkle
from arkfs.xet.constants import (
    DATA_KEY,
    GLOBAL_DEDUP_MODULUS,
    HASH_SIZE,
    INTERNAL_NODE_KEY,
    MAX_CHILDREN,
    MEAN_BRANCHING_FACTOR,
    VERIFICATION_KEY,
    ZERO_KEY,
)
from arkfs.xet.errors import HashStringError

ZERO_HASH = bytes(HASH_SIZE)
_FOUR_U64 = struct.Struct("<4Q")
_FOUR_U64_BE = struct.Struct(">4Q")


def keyed_hash(key: bytes, data: bytes | memoryview) -> bytes:
    """BLAKE3 keyed hash of data (32 bytes)."""
    return blake3.blake3(data, key=key).digest()


def chunk_hash(data: bytes | memoryview) -> bytes:
    """Chunk Hashes: BLAKE3 keyed with DATA_KEY."""
    return blake3.blake3(data, key=DATA_KEY).digest()


def hash_to_string(h: bytes) -> str:
    """Hash String Representation: four little-endian u64 values, 16 hex digits each."""
    if len(h) != HASH_SIZE:
        raise HashStringError(f"a hash is {HASH_SIZE} bytes, got {len(h)}")
    return _FOUR_U64_BE.pack(*_FOUR_U64.unpack(h)).hex()


def string_to_hash(s: str) -> bytes:
    """Inverse of hash_to_string; raises HashStringError on anything but 64 hex digits."""
    if not isinstance(s, str):  # as a msgpack reply may hold: bytes, a number
        raise HashStringError(f"a XET hash string is text, not {type(s).__name__}")
    if len(s) != 2 * HASH_SIZE:
        raise HashStringError(
            f"a XET hash string has 64 hex digits, got {len(s)} characters: {s!r}"
        )
    try:
        raw = bytes.fromhex(s)
    except ValueError:
        raise HashStringError(f"not a hex string: {s!r}") from None
    return _FOUR_U64.pack(*_FOUR_U64.unpack(raw[::-1])[::-1])


def _u64_tail(h: bytes) -> int:
    return int.from_bytes(h[24:32], "little")


def _node_lines(nodes: Sequence[tuple[bytes, int]]) -> list[str]:
    """The '{hash} : {size}\\n' line of each node, in a few bulk calls."""
    n = len(nodes)
    words = struct.unpack(f"<{4 * n}Q", b"".join(h for h, _ in nodes))
    text = struct.pack(f">{4 * n}Q", *words).hex()
    step = 2 * HASH_SIZE
    return [f"{text[k * step : (k + 1) * step]} : {size}\n" for k, (_, size) in enumerate(nodes)]


def merged_hash(nodes: Iterable[tuple[bytes, int]]) -> tuple[bytes, int]:
    """Internal Node Hash Function: hash of '{hash} : {size}\\n' lines, and the summed size."""
    nodes = list(nodes)
    text = "".join(_node_lines(nodes)).encode()
    return keyed_hash(INTERNAL_NODE_KEY, text), sum(size for _, size in nodes)


def merkle_root(nodes: Sequence[tuple[bytes, int]]) -> bytes:
    """Root Computation: the aggregated hash tree over (hash, size) pairs; ZERO_HASH if empty."""
    return packed_root(*_packed(nodes))


def _packed(nodes: Sequence[tuple[bytes, int]]) -> tuple[bytes, "array[int]"]:
    """(hash, size) pairs as packed_root takes them: the hashes joined, and their ends."""
    return b"".join(h for h, _ in nodes), array("Q", accumulate(s for _, s in nodes))


def packed_root(hashes: bytes, ends: "array[int]") -> bytes:
    """merkle_root of the nodes whose hashes are joined in hashes and whose sizes, laid end
    to end from 0, end at ends ('Q'), as footers and file maps keep them.

    Cut Point Determination groups each level's nodes: a group ends after a node whose
    last u64 is a multiple of MEAN_BRANCHING_FACTOR, from its third node on, or at
    MAX_CHILDREN nodes; each group is hashed as merged_hash does. In C (_merkle.c),
    without the GIL: a 1 GiB file has about 16,000 chunks, and the first byte of a cold
    read waits for its file hash.
    """
    if not ends:
        return ZERO_HASH
    return _merkle.root(INTERNAL_NODE_KEY, hashes, ends, MEAN_BRANCHING_FACTOR, MAX_CHILDREN)


def xorb_hash(chunks: Sequence[tuple[bytes, int]]) -> bytes:
    """Xorb Hash Computation: Merkle root of (chunk hash, chunk size)."""
    return merkle_root(chunks)


def file_hash(chunks: Sequence[tuple[bytes, int]]) -> bytes:
    """File Hashes: Merkle root of the chunks, hashed once more with ZERO_KEY.

    The empty file hashes to ZERO_HASH. The draft's "File Hashes" section says
    keyed_hash(ZERO_KEY, ZERO_HASH), but hf_xet (the reference) and every stored XET file
    use ZERO_HASH, and interoperating with them is what a file hash is for.
    """
    return packed_file_hash(*_packed(chunks))


def packed_file_hash(hashes: bytes, ends: "array[int]") -> bytes:
    """file_hash of chunks given as packed_root takes them."""
    if not ends:
        return ZERO_HASH
    return keyed_hash(ZERO_KEY, packed_root(hashes, ends))


def verification_hash(chunk_hashes: Sequence[bytes]) -> bytes:
    """Term Verification Hashes: VERIFICATION_KEY over the raw concatenated chunk hashes."""
    return keyed_hash(VERIFICATION_KEY, b"".join(chunk_hashes))


def is_global_dedup_eligible(h: bytes, first_in_file: bool) -> bool:
    """Global Deduplication, Eligibility Criteria."""
    return first_in_file or _u64_tail(h) % GLOBAL_DEDUP_MODULUS == 0
