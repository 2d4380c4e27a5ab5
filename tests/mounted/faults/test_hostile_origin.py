"""Plain HTTP objects from hostile origins, through a real mount and real read(2)s: 0 wrong
bytes (each read is the truth or EIO), the mount daemon's peak RSS within RSS_BOUND, no
read(2) without end, and recovery without a remount. Each test prints its figures:
`hostile MODE: wrong bytes W, peak RSS R MiB, longest read L s`."""

import errno
import json
import os
import random
import signal
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.cli import run_arkfs
from tests.support.hostile_origin import SHORT, Hostile, Origin, hostile_origin, truth
from tests.support.mount import Mounted, arkfs_mount, pread_in_child
from tests.support.server import Server

NAAN = "b5557"
MIB = 1024 * 1024
RSS_BOUND = 256 * MIB  # the mount daemon's peak resident memory, whatever the origin does
READ_GUARD = 60.0  # seconds: a read(2) longer than this is an unbounded wait, not slowness
CHUNK = 128 * 1024  # bytes per read(2), as the kernel's readahead asks


@dataclass
class Figures:
    """What one mode's reads got."""

    mode: str
    wrong: int = 0
    longest: float = 0.0
    errors: list[int] = field(default_factory=list)

    def check(self, m: Mounted) -> None:
        """Assert the suite's three bounds and print the figures."""
        peak = vm_hwm(m.pid)
        print(
            f"hostile {self.mode}: wrong bytes {self.wrong}, peak RSS {peak / MIB:.0f} MiB, "
            f"longest read {self.longest:.2f} s"
        )
        assert self.wrong == 0
        assert peak <= RSS_BOUND
        assert self.longest < READ_GUARD


def vm_hwm(pid: int) -> int:
    """The peak resident memory of process pid, in bytes (VmHWM)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for pid {pid}")


@contextmanager
def mounted(origin: Origin, tmp_path: Path, name: str = "mnt") -> Iterator[Mounted]:
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps([{"what": NAAN, "target": {"url": origin.url + "/o/${value}"}}]))
    args = ("--registry", str(registry), "--fallback", "off", "--cache-dir", str(tmp_path / "c"))
    with arkfs_mount(tmp_path / name, *args) as m:
        yield m


def at(m: Mounted, name: str) -> Path:
    return m.path / f"ark:{NAAN}/{name}"


def pread(fig: Figures, fd: int, offset: int, length: int, version: int) -> bytes | None:
    """One read(2), timed: its bytes (wrong ones counted against version), or None on
    EIO (any other error fails the test)."""
    start = time.monotonic()
    try:
        data = os.pread(fd, length, offset)
    except OSError as exc:
        assert exc.errno == errno.EIO, exc
        fig.errors.append(exc.errno)
        return None
    finally:
        fig.longest = max(fig.longest, time.monotonic() - start)
    want = truth(version, offset, offset + len(data))
    fig.wrong += sum(a != b for a, b in zip(data, want, strict=True))
    return data


def read_all(fig: Figures, path: Path, version: int) -> int:
    """Read path from start to end (stopping at the first EIO): bytes read."""
    fd, got = os.open(path, os.O_RDONLY), 0
    try:
        while (data := pread(fig, fd, got, MIB, version)) is not None and data:
            got += len(data)
    finally:
        os.close(fd)
    return got


@pytest.fixture
def origin() -> Iterator[Origin]:
    with hostile_origin() as server:
        yield server


def test_a_206_of_other_bytes_is_refused(origin: Origin, tmp_path: Path) -> None:
    """Item 1: Content-Range must be the range asked; this origin says it sent another."""
    origin.objects["/o/lie"] = Hostile(40 * MIB, ranges="lie")
    fig = Figures("lying 206")
    with mounted(origin, tmp_path) as m:
        assert read_all(fig, at(m, "lie"), 1) < 40 * MIB
        assert fig.errors == [errno.EIO]
        assert "sent range" in m.log.read_text()
        fig.check(m)


@pytest.mark.parametrize("size", [MIB, 20 * MIB], ids=["whole", "ranged"])
def test_a_head_shorter_than_the_object_never_truncates_it(
    origin: Origin, tmp_path: Path, size: int
) -> None:
    """Item 1: a length stated only by a HEAD is checked against every reply."""
    origin.objects["/o/short"] = Hostile(size, head="short")
    fig = Figures(f"short HEAD ({size // MIB} MiB)")
    with mounted(origin, tmp_path) as m:
        path = at(m, "short")
        assert path.stat().st_size == size - SHORT  # what the HEAD claims
        read_all(fig, path, 1)
        assert fig.errors == [errno.EIO]  # never a silent short file
        fig.check(m)


# Item 2: each origin below changes the object between two reads of one open file; the
# second read is the first version's bytes (a whole object read once) or EIO, never the
# second version's.
CHANGING = {
    "ignores If-Match and If-Range": Hostile(20 * MIB, conditional=False),
    "no ETag": Hostile(12 * MIB, etag=None),
    "constant ETag, digest": Hostile(20 * MIB, etag="const", digest=True),
    "constant ETag, Last-Modified": Hostile(20 * MIB, etag="const", dated=True),
    "weak ETag with 206": Hostile(12 * MIB, etag="weak", conditional=False),
}


@pytest.mark.parametrize("mode", list(CHANGING))
def test_one_open_file_never_mixes_two_versions(origin: Origin, tmp_path: Path, mode: str) -> None:
    obj = origin.objects["/o/x"] = CHANGING[mode]
    fig = Figures(f"changes while open: {mode}")
    with mounted(origin, tmp_path) as m:
        fd = os.open(at(m, "x"), os.O_RDONLY)
        try:
            assert pread(fig, fd, 0, CHUNK, 1) is not None
            obj.version = 2
            for offset in (10 * MIB, 5 * MIB, 0):
                pread(fig, fd, offset, CHUNK, 1)  # the first version's bytes, or EIO
        finally:
            os.close(fd)
        fig.check(m)


def test_an_object_with_a_weak_etag_is_read_whole(origin: Origin, tmp_path: Path) -> None:
    """Item 5: an RFC-compliant origin ignores If-Range with a weak ETag (answers 200)."""
    origin.objects["/o/weak"] = Hostile(12 * MIB, etag="weak")
    origin.objects["/o/huge"] = Hostile(100 * MIB, etag="weak")
    fig = Figures("weak ETag, RFC origin")
    with mounted(origin, tmp_path) as m:
        assert read_all(fig, at(m, "weak"), 1) == 12 * MIB
        assert fig.errors == []
        sent = origin.body_bytes
        read_all(fig, at(m, "huge"), 1)  # past the whole-object bound: a clear error
        assert fig.errors == [errno.EIO]
        assert origin.body_bytes == sent  # without downloading it first
        assert "the most read whole" in m.log.read_text()
        fig.check(m)


def test_an_origin_that_ignores_range_costs_bounded_memory(origin: Origin, tmp_path: Path) -> None:
    """Item 3: 200 to every Range on a 200 MiB object: each block is read out of the
    stream, the bytes before it dropped, and the connection closed after it."""
    origin.objects["/o/norange"] = Hostile(200 * MIB, ranges="ignore")
    fig = Figures("ignores Range, 200 MiB, 4 readers")
    with mounted(origin, tmp_path) as m:

        def reader(first: int) -> None:
            fd = os.open(at(m, "norange"), os.O_RDONLY)
            try:
                for offset in (first, first + 100 * MIB, 200 * MIB - 4096 - first):
                    assert pread(fig, fd, offset, 4096, 1) is not None
            finally:
                os.close(fd)

        with ThreadPoolExecutor(4) as pool:
            list(pool.map(reader, (0, 9 * MIB + 5, 37 * MIB + 11, 71 * MIB)))
        assert origin.body_bytes < 12 * 200 * MIB  # not the whole body for each read
        fig.check(m)


def test_a_head_405_costs_bounded_memory(origin: Origin, tmp_path: Path) -> None:
    """Item 3: no HEAD on a 400 MiB object: its length comes from a 206 of byte 0 (or a
    counted body), never from a body kept in memory."""
    origin.objects["/o/nohead"] = Hostile(400 * MIB, head="405")
    origin.objects["/o/nothing"] = Hostile(400 * MIB, head="405", ranges="ignore")
    fig = Figures("HEAD 405, 400 MiB")
    with mounted(origin, tmp_path) as m:
        path = at(m, "nohead")
        assert path.stat().st_size == 400 * MIB
        fd = os.open(path, os.O_RDONLY)
        try:
            for offset in (0, 399 * MIB, 123 * MIB + 17):
                assert pread(fig, fd, offset, 4096, 1) is not None
        finally:
            os.close(fd)
        with pytest.raises(OSError) as failed:  # neither HEAD nor Range: a clear error
            at(m, "nothing").stat()
        assert failed.value.errno in (errno.EIO, errno.ENOENT)
        assert "answers neither HEAD nor Range" in m.log.read_text()
        fig.check(m)


def test_a_changed_object_fails_its_open_file_and_the_next_open_reads_the_new_one(
    origin: Origin, tmp_path: Path
) -> None:
    """Item 6: the open file that saw the change gets EIO; the next open, at once, reads
    the new version whole (its new size too), without a remount."""
    obj = origin.objects["/o/x"] = Hostile(20 * MIB)
    fig = Figures("changes while open, then opened again")
    with mounted(origin, tmp_path) as m:
        path = at(m, "x")
        fd = os.open(path, os.O_RDONLY)
        try:
            assert pread(fig, fd, 0, CHUNK, 1) is not None
            obj.version, obj.size = 2, 24 * MIB + 3
            assert pread(fig, fd, 10 * MIB, CHUNK, 1) is None
        finally:
            os.close(fd)
        assert path.stat().st_size == 24 * MIB + 3
        assert read_all(fig, path, 2) == 24 * MIB + 3
        assert fig.errors == [errno.EIO]
        fig.check(m)


def test_a_file_opened_after_an_unseen_change_reads_the_new_version(
    origin: Origin, tmp_path: Path
) -> None:
    """Item 6: the object changes (same size) while no file is open, before the mount
    has asked again: the next open, whose first read finds the change, reads the new
    version instead of failing (none of the old one was handed out to it)."""
    obj = origin.objects["/o/x"] = Hostile(60 * MIB)
    fig = Figures("changed while closed, then opened")
    with mounted(origin, tmp_path) as m:
        path = at(m, "x")
        fd = os.open(path, os.O_RDONLY)
        try:
            assert pread(fig, fd, 0, CHUNK, 1) is not None
        finally:
            os.close(fd)
        obj.version = 2
        fd = os.open(path, os.O_RDONLY)
        try:
            assert pread(fig, fd, 50 * MIB, CHUNK, 2) is not None  # a block never fetched
            assert pread(fig, fd, 0, CHUNK, 2) is not None
        finally:
            os.close(fd)
        assert fig.errors == []
        fig.check(m)


def test_bytes_that_failed_the_digest_never_come_back_from_the_cache(
    origin: Origin, tmp_path: Path
) -> None:
    """Item 4, end to end (the race with a prefetch in flight is pinned down in
    tests/mount/data/test_object_loader.py): a flipped byte fails the digest of a sequential
    read; remounted over the same cache with the origin healthy, a pread inside that
    block gets the right bytes."""
    flip = 5 * MIB + 123
    obj = origin.objects["/o/flip"] = Hostile(24 * MIB, digest=True, flip=flip)
    fig = Figures("digest failure, then remount")
    with mounted(origin, tmp_path, "m1") as m:
        read_all(fig, at(m, "flip"), 1)
        assert fig.errors == [errno.EIO]
        assert "do not match its SHA-256 digest" in m.log.read_text()
    # A reader gets a big object's bytes before its last block brings the digest's verdict:
    # those rest on the ETag alone (README), so this origin's flipped byte was handed out.
    print(f"hostile digest failure, first mount: {fig.wrong} wrong byte(s) before the verdict")
    fig.wrong, obj.flip = 0, None
    with mounted(origin, tmp_path, "m2") as m:
        fd = os.open(at(m, "flip"), os.O_RDONLY)
        try:
            assert pread(fig, fd, flip - 100, 4096, 1) is not None
        finally:
            os.close(fd)
        assert read_all(fig, at(m, "flip"), 1) == 24 * MIB
        fig.check(m)


def test_a_read_right_after_the_origin_heals_is_tried(tmp_path: Path) -> None:
    """Item 11b: an archive's server, frozen (SIGSTOP) until a read fails on its deadline,
    then thawed: the very next read of a fresh file goes out and gets its bytes, where
    the fail-fast window used to fail it at once."""
    rng = random.Random(23)
    files = {f"f{i}.bin": rng.randbytes(2 * MIB) for i in range(2)}
    (tmp_path / "tree").mkdir()
    for name, data in files.items():
        (tmp_path / "tree" / name).write_bytes(data)
    (tmp_path / "tokens").write_text("writer write\n")
    fig = Figures("origin down, then healed")
    with Server(tmp_path / "store", "--open-read", "--tokens", str(tmp_path / "tokens")) as server:
        done = run_arkfs(
            "publish", str(tmp_path / "tree"), "--ark", "ark:12345/x6heal", "--server",
            server.url, "--token", "writer", "--who", "w", "--what", "w", "--persistence", "p",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        args = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *args) as m:
            root = m.path / "ark:12345/x6heal"
            assert sorted(os.listdir(root)) == sorted(files)  # names known: reads only now
            server.signal(signal.SIGSTOP)
            try:
                assert pread_in_child(root / "f0.bin", 0, MIB) == errno.EIO
            finally:
                server.signal(signal.SIGCONT)
            start = time.monotonic()
            got = pread_in_child(root / "f1.bin", 0, 2 * MIB)
            fig.longest = time.monotonic() - start
            assert got == files["f1.bin"]
            fig.check(m)
