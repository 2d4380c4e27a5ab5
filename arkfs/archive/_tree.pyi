"""Type stub of a manifest's tree in C: its check, its children index and its listings'
columns (_tree.c)."""

from array import array

FAULT_ENDS: int
FAULT_ORDER: int
FAULT_NAME: int
FAULT_PARENT: int

def parents(
    paths: bytes | memoryview, ends: array[int] | bytes, dirs: dict[bytes, int], /
) -> tuple[bytes, int, int]: ...
def by_parent(parents: array[int] | bytes, /) -> bytes: ...
def names(
    paths: bytes | memoryview, ends: array[int] | bytes, positions: array[int], cut: int, /
) -> list[bytes]: ...
def stats(
    kinds: bytes,
    modes: array[int],
    sizes: array[int],
    mtimes: array[int],
    positions: array[int],
    type_bits: tuple[int, ...],
    /,
) -> tuple[list[int], list[int], list[int], bytes]: ...
def extremes(column: array[int] | bytes, /) -> tuple[int, int] | None: ...
