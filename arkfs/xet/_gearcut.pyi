"""Type stub of the C gear-hash scanner (_gearcut.c)."""

def scan(
    table: bytes,
    data: bytes | bytearray | memoryview,
    h: int,
    pos: int,
    min_size: int,
    max_size: int,
    mask: int,
    /,
) -> tuple[list[int], int, int]: ...
