"""Type stub of the C Merkle root (_merkle.c)."""

def root(
    key: bytes,
    hashes: bytes | bytearray | memoryview,
    sizes: bytes | bytearray | memoryview,
    mean_branching: int,
    max_children: int,
    /,
) -> bytes: ...
