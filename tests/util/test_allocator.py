"""The allocator's settings and its release of freed pages, on glibc (this suite's libc)."""

import pytest

from arkfs.util.allocator import release_freed

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

MIB = 1 << 20


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_release_freed_gives_the_freed_pages_back() -> None:
    """200 MB of 1 KB blocks (malloc's, not Python's small-object arenas) freed but one
    in 64: the heap keeps the space resident until release_freed returns it."""
    kept: list[bytes] = []
    freed: list[bytes] = []
    for i in range(200_000):
        (kept if i % 64 == 0 else freed).append(bytes(bytearray(1000)))
    freed.clear()
    before = _rss()
    release_freed()
    assert before - _rss() > 100 * MIB
    assert len(kept) == 3125
