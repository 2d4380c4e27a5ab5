"""Type stub of the C Merkle root (_merkle.c)."""

from array import array

def root(
    key: bytes,
    hashes: bytes,
    ends: bytes | array[int],
    mean_branching: int,
    max_children: int,
    /,
) -> bytes: ...
