"""Type stub of a manifest's tree in C: its check and its children index (_tree.c)."""

from array import array

FAULT_ENDS: int
FAULT_ORDER: int
FAULT_NAME: int
FAULT_PARENT: int

def parents(
    paths: bytes | memoryview, ends: array[int] | bytes, dirs: dict[bytes, int], /
) -> tuple[bytes, int, int]: ...
def by_parent(parents: array[int] | bytes, /) -> bytes: ...
