"""The mount under load: 32 parallel readers of one large file, each at its own offsets,
read the right bytes while the daemon's peak RSS stays under 300 MB."""

import concurrent.futures
import random
from pathlib import Path

import pytest

from tests.support.faults import Archive, Proxy, mount_through
from tests.support.mount import BLOCK, timed_read

READERS = 32
RSS_BUDGET = 300 * 1000 * 1000


def peak_rss(pid: int) -> int:
    """The process's peak resident set size (VmHWM), in bytes."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


@pytest.mark.slow
def test_32_parallel_readers_within_the_memory_budget(
    archive: Archive, proxy: Proxy, tmp_path: Path
) -> None:
    big = archive.files["big.bin"]
    blocks = list(range(0, len(big), BLOCK))
    with mount_through(proxy, tmp_path) as m:
        path = m.path / archive.ark / "big.bin"

        def reader(i: int) -> int:
            offsets = random.Random(i).sample(blocks, 24)
            got = timed_read(path, tmp_path, offsets)
            assert got.errno is None
            return got.wrong_bytes(big)

        with concurrent.futures.ThreadPoolExecutor(READERS) as pool:
            wrong = list(pool.map(reader, range(READERS)))
        peak = peak_rss(m.pid)
    print(f"\n32 readers: peak RSS {peak / 1e6:.0f} MB", end="")
    assert wrong == [0] * READERS
    assert peak < RSS_BUDGET, f"peak RSS {peak / 1e6:.0f} MB"
