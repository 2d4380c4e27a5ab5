"""The disk cache damaged under a live mount, and over a remount: every kind of cache file
(packs of chunks, xorb footers, file maps, cached archive records) flipped, truncated or
deleted; and a cache on a full disk. Never a wrong byte: damaged files are refused and
fetched again, or, with no server to fetch from, the read fails with EIO."""

import errno
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.faults import Archive, Proxy, mount_through
from tests.support.mount import drop_page_cache, mount_stats, timed_read, wait_for_cache_writes

KINDS = ("packs", "footers", "maps", "archives")
DAMAGES = ("flip", "truncate", "delete")


def damage(cache: Path, kind: str, how: str, at: float = 0.5) -> int:
    """Damage every cache file of a kind (a flip or a cut at fraction at of its length);
    how many there were."""
    files = [p for p in (cache / kind).rglob("*") if p.is_file()]
    for path in files:
        if how == "delete":
            path.unlink()
            continue
        data = bytearray(path.read_bytes())
        if how == "flip":
            data[int(len(data) * at)] ^= 0x01
        else:
            del data[int(len(data) * at) :]
        path.write_bytes(bytes(data))
    return len(files)


def read_whole(archive: Archive, path: Path, scratch: Path, name: str = "a.bin") -> int | None:
    """Read a file of the archive through the mount: None if it read whole, else the errno;
    assert no byte read was wrong either way."""
    got = timed_read(path, scratch)
    assert got.wrong_bytes(archive.files[name]) == 0
    if got.errno is None:
        assert sum(map(len, got.blocks.values())) == len(archive.files[name])
    return got.errno


@pytest.mark.parametrize("how", DAMAGES)
@pytest.mark.parametrize("kind", KINDS)
def test_damaged_cache_under_a_mount_and_over_a_remount(
    kind: str, how: str, archive: Archive, proxy: Proxy, tmp_path: Path
) -> None:
    with mount_through(proxy, tmp_path) as m:
        path = m.path / archive.ark / "a.bin"
        assert read_whole(archive, path, tmp_path) is None
        wait_for_cache_writes(m.path)
        assert damage(tmp_path / "cache", kind, how) > 0
        big = m.path / archive.ark / "big.bin"  # more than the mount keeps in memory
        assert read_whole(archive, big, tmp_path, "big.bin") is None
        drop_page_cache(path)
        assert read_whole(archive, path, tmp_path) is None  # from disk, refetched if damaged
        if kind == "packs" and how != "delete":
            assert mount_stats(m.path)["cache_bad_files"] > 0
    damage(tmp_path / "cache", kind, how, at=0.3)  # whatever the mount wrote back too
    proxy.down("refuse")
    with mount_through(proxy, tmp_path) as m:  # the damaged cache, and no server
        path = m.path / archive.ark / "a.bin"
        try:
            result = read_whole(archive, path, tmp_path)
        except OSError as exc:  # no archive record to trust, and no server: no archive
            assert kind == "archives"
            result = exc.errno
        if kind == "footers":  # chunks and maps are whole: the read needs no footer
            assert result is None
        else:
            assert result in (errno.EIO, errno.ENOENT)
    proxy.up()
    with mount_through(proxy, tmp_path) as m:
        assert read_whole(archive, m.path / archive.ark / "a.bin", tmp_path) is None


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs, unmounted at the end."""
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_full_cache_disk_costs_caching_not_bytes(
    archive: Archive, proxy: Proxy, tmp_path: Path, small_disk: Path
) -> None:
    """With the cache on a 4 MiB disk (and a cache size far beyond it), reading 48 MiB
    fills the disk: every byte still reads right, and the mount goes on serving."""
    with mount_through(proxy, small_disk, "--cache-size", "1G") as m:
        for _ in range(2):
            path = m.path / archive.ark / "big.bin"
            assert read_whole(archive, path, tmp_path, "big.bin") is None
            drop_page_cache(path)
        assert read_whole(archive, m.path / archive.ark / "b.bin", tmp_path, "b.bin") is None
        log = m.log.read_text()
    assert os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize < 1 << 20
    assert "No space left on device" in log or "ENOSPC" in log, log[-2000:]


def read_4k_randomly(path: Path, data: bytes) -> None:
    """Read a file in 4 KiB reads in a shuffled order, no readahead; assert every byte."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)  # the kernel asks for 4 KiB only
        offsets = list(range(0, len(data), 4096))
        random.Random(4).shuffle(offsets)
        for off in offsets:
            assert os.pread(fd, 4096, off) == data[off : off + 4096], off
    finally:
        os.close(fd)


@pytest.mark.parametrize("how", ("flip", "truncate"))
def test_small_reads_from_damaged_packs_are_fetched_again(
    how: str, archive: Archive, proxy: Proxy, tmp_path: Path
) -> None:
    """4 KiB random reads of a remount load whole chunks from the cache's packs, checked
    against their checksums (not BLAKE3): a damaged pack is refused, fetched again."""
    with mount_through(proxy, tmp_path) as m:
        assert read_whole(archive, m.path / archive.ark / "a.bin", tmp_path) is None
        wait_for_cache_writes(m.path)
    assert damage(tmp_path / "cache", "packs", how) > 0
    with mount_through(proxy, tmp_path) as m:
        read_4k_randomly(m.path / archive.ark / "a.bin", archive.files["a.bin"])
        stats = mount_stats(m.path)
        assert stats["fetches"] > 0
        if how == "flip":  # a cut-short pack is already refused by the mount's scan
            assert stats["cache_bad_files"] > 0
