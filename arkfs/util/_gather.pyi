"""Type stub of the C gather (_gather.c)."""

from collections.abc import Sequence

def gather(
    dest: bytearray | memoryview, parts: Sequence[bytes | bytearray | memoryview], /
) -> int: ...
