"""Big plain HTTP objects through the mount's disk cache and prefetch: served offline after
a remount, never mixed with another version, refetched when a cached block is damaged,
and refused (EIO) when their bytes fail the responder's SHA-256 digest."""

import errno
import json
import random
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from tests.support.mount import Mounted, arkfs_mount, mount_stats, wait_for_cache_writes
from tests.support.objects import Obj, Objects, object_server

NAAN = "b5556"
MIB = 1024 * 1024
BIG = random.Random(11).randbytes(24 * MIB)  # six 4 MiB blocks
BLOCKS = 6


@pytest.fixture
def objects() -> Iterator[Objects]:
    with object_server() as server:
        server.objects["/o/big"] = Obj(BIG, etag='"big-1"', digest=None)
        yield server


def mount(tmp_path: Path, objects: Objects, name: str) -> AbstractContextManager[Mounted]:
    """A mount finding NAAN's ARKs at objects' server, with a disk cache shared by all."""
    registry = tmp_path / "registry.json"
    registry.write_text(
        json.dumps([{"what": NAAN, "target": {"url": objects.url + "/o/${value}"}}])
    )
    return arkfs_mount(
        tmp_path / name,
        *("--registry", str(registry), "--fallback", "off", "--cache-dir", str(tmp_path / "c")),
    )


def copy(m: Mounted, name: str, to: Path) -> bytes:
    """cp the ARK's file out of the mount (sequential reads); its bytes."""
    subprocess.run(["cp", str(m.path / f"ark:{NAAN}/{name}"), str(to)], check=True)
    return to.read_bytes()


def block_files(tmp_path: Path) -> list[Path]:
    return sorted(p for p in (tmp_path / "c" / "blocks").rglob("*") if p.is_file())


@pytest.mark.slow
def test_a_big_object_is_prefetched_and_served_from_disk_after_a_remount_offline(
    tmp_path: Path,
) -> None:
    with object_server() as server:
        server.objects["/o/big"] = Obj(BIG, etag='"big-1"', digest=None)
        with mount(tmp_path, server, "m1") as m:
            assert copy(m, "big", tmp_path / "out1") == BIG
            wait_for_cache_writes(m.path)
            stats = mount_stats(m.path)
        assert stats["object_fetches"] == BLOCKS  # each block fetched once
        assert stats["object_prefetches"] > 0  # sequential reads claimed blocks ahead
        assert stats["prefetched_bytes"] > 0
        assert len(block_files(tmp_path)) == BLOCKS
    # The server is gone: the ARK's record and its blocks come from the disk cache.
    with mount(tmp_path, server, "m2") as m:
        assert copy(m, "big", tmp_path / "out2") == BIG
        stats = mount_stats(m.path)
        assert stats["object_disk_hits"] == BLOCKS
        assert stats["object_fetches"] == 0
        assert "the record of its object cached on disk serves" in m.log.read_text()


@pytest.mark.slow
def test_a_changed_object_never_reuses_the_blocks_of_the_old_one(
    objects: Objects, tmp_path: Path
) -> None:
    with mount(tmp_path, objects, "m1") as m:
        assert copy(m, "big", tmp_path / "out1") == BIG
    new = BIG[::-1]
    objects.objects["/o/big"] = Obj(new, etag='"big-2"', digest=None)
    with mount(tmp_path, objects, "m2") as m:
        assert copy(m, "big", tmp_path / "out2") == new
        stats = mount_stats(m.path)
    assert stats["object_disk_hits"] == 0
    assert stats["object_fetches"] == BLOCKS


@pytest.mark.slow
def test_a_damaged_cached_block_is_fetched_again(objects: Objects, tmp_path: Path) -> None:
    with mount(tmp_path, objects, "m1") as m:
        assert copy(m, "big", tmp_path / "out1") == BIG
    files = block_files(tmp_path)
    assert len(files) == BLOCKS
    damaged = bytearray(files[2].read_bytes())
    damaged[len(damaged) // 2] ^= 0x20
    files[2].write_bytes(bytes(damaged))
    asked = objects.ranges_asked
    with mount(tmp_path, objects, "m2") as m:
        assert copy(m, "big", tmp_path / "out2") == BIG
        stats = mount_stats(m.path)
        log = m.log.read_text()
    assert stats["cache_bad_files"] == 1
    assert stats["object_disk_hits"] == BLOCKS - 1
    assert stats["object_fetches"] == 1
    assert objects.ranges_asked == asked + 1
    assert log.count("does not match its digest (damaged)") == 1


@pytest.mark.slow
def test_a_big_object_failing_its_digest_is_an_error_and_its_blocks_are_dropped(
    objects: Objects, tmp_path: Path
) -> None:
    objects.objects["/o/wrong"] = Obj(BIG, etag='"w-1"', digest="wrong")
    with mount(tmp_path, objects, "m1") as m:
        path = m.path / f"ark:{NAAN}/wrong"
        with pytest.raises(subprocess.CalledProcessError):
            copy(m, "wrong", tmp_path / "out")
        with open(path, "rb", buffering=0) as f, pytest.raises(OSError) as again:
            f.read(4096)  # known wrong: refused, even from its first block
        assert again.value.errno == errno.EIO
        wait_for_cache_writes(m.path)
        log = m.log.read_text()
    assert "do not match its SHA-256 digest" in log
    assert block_files(tmp_path) == []


@pytest.mark.slow
def test_objects_without_an_etag_are_read_whole_and_cached_only_under_a_digest(
    objects: Objects, tmp_path: Path
) -> None:
    objects.objects["/o/plain"] = Obj(BIG, digest=None)  # no ETag, no digest
    objects.objects["/o/digested"] = Obj(BIG, digest="repr")  # a digest, but no ETag
    objects.objects["/o/small"] = Obj(b"small, checked whole\n", digest="repr")
    with mount(tmp_path, objects, "m1") as m:
        assert copy(m, "plain", tmp_path / "plain") == BIG
        assert copy(m, "digested", tmp_path / "digested") == BIG
        assert copy(m, "small", tmp_path / "small") == b"small, checked whole\n"
        wait_for_cache_writes(m.path)
        assert mount_stats(m.path)["object_fetches"] == 3  # each one GET of it whole
    assert objects.ranges_asked == 0
    assert len(block_files(tmp_path)) == 2  # those a digest ties to a version
