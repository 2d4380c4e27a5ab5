"""Directory scans (arkfs.mount.fuse.scans): SCAN files opened in name order preload the
next small files' maps; fewer, a jump back or far ahead, opens elsewhere, or files with
hard links do not."""

from types import SimpleNamespace
from typing import cast

import pytest

from arkfs.archive.manifest import Entries, Entry, Kind
from arkfs.archive.record import Archive
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend, CasReader
from arkfs.mount.data.chunk_loader import READ_AHEAD
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.fuse.scans import NEAR, SCAN, SLICE, Scans
from arkfs.mount.names.indexed import Children, IndexedArchive, Positions

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

FILES = 2 * SLICE + 10  # in d/, with a symlink, a subdirectory, an empty and a big file


def _xet(i: int) -> bytes:
    return i.to_bytes(32, "big")


def _archive(version: int = 1) -> IndexedArchive:
    listed = [Entry("d", Kind.DIR, 0, 0o755, 1)]
    listed += [Entry(f"d/f{i:05d}", Kind.FILE, 100 + i, 0o644, 1, _xet(i)) for i in range(FILES)]
    listed += [
        Entry("d/f00002.0", Kind.FILE, 0, 0o644, 1, _xet(FILES)),  # empty: nothing to read
        Entry("d/f00003.link", Kind.SYMLINK, 0, 0o777, 1, target="f00001"),
        Entry("d/f00004.sub", Kind.DIR, 0, 0o755, 1),
        Entry("d/f00004.sub/inner", Kind.FILE, 7, 0o644, 1, _xet(FILES + 1)),
        Entry("d/f00005.big", Kind.FILE, READ_AHEAD + 1, 0o644, 1, _xet(FILES + 2)),
        Entry("other", Kind.FILE, 9, 0o644, 1, _xet(FILES + 3)),
        Entry("h", Kind.DIR, 0, 0o755, 1),
        Entry("h/a", Kind.FILE, 9, 0o644, 1, _xet(FILES + 4), link="h/a"),
        Entry("h/b", Kind.FILE, 9, 0o644, 1, _xet(FILES + 4), link="h/a"),
        Entry("h/c", Kind.FILE, 9, 0o644, 1, _xet(FILES + 4), link="h/a"),
    ]
    entries = Entries.of(sorted(listed, key=lambda e: e.path))
    record = cast(Archive, SimpleNamespace(version=SimpleNamespace(version=version)))
    backend = cast(Backend, "backend")
    return IndexedArchive(
        parse("ark:99999/scan"), record, entries, backend, Positions(entries),
        Children(entries), {}, "",
    )  # fmt: skip


class _Reader:
    """The one call Scans makes of a ContentReader, noted."""

    def __init__(self) -> None:
        self.preloads: list[list[tuple[bytes, int]]] = []

    def preload(self, backend: CasReader, files: list[tuple[bytes, int]]) -> None:
        assert backend == "backend"
        self.preloads.append(files)


def _open(scans: Scans, archive: IndexedArchive, *paths: str) -> None:
    for path in paths:
        index = archive.entries.position(path)
        assert index is not None, path
        scans.opened(archive, index)


def _scans() -> tuple[Scans, _Reader]:
    reader = _Reader()
    return Scans(cast(ContentReader, reader)), reader


def test_fewer_files_in_order_preload_nothing() -> None:
    scans, reader = _scans()
    archive = _archive()
    _open(scans, archive, "other", "d/f00004.sub/inner", "d/f00000", "d/f00001")
    assert SCAN == 3 and reader.preloads == []


def test_the_third_file_in_order_preloads_the_next_slice_of_files_only() -> None:
    scans, reader = _scans()
    archive = _archive()
    _open(scans, archive, "d/f00000", "d/f00001", "d/f00002")
    [files] = reader.preloads
    # from the file just opened on; no empty or big file, symlink or directory among them
    assert files[0] == (_xet(2), 102)
    assert all(0 < size <= READ_AHEAD for _, size in files)
    assert len(files) == SLICE - 4  # the slice's entries less those four


def test_a_scan_preloads_the_next_slice_half_way_through_the_last() -> None:
    scans, reader = _scans()
    archive = _archive()
    names = [f"d/f{i:05d}" for i in range(FILES)]
    # The first slice: entries 2 to 1001 (f00002 to f00997); half way: f00499, at 503.
    _open(scans, archive, *names[:499])
    assert len(reader.preloads) == 1
    _open(scans, archive, names[499])
    assert len(reader.preloads) == 2
    assert reader.preloads[1][0][0] == _xet(SLICE - 2)  # where the first slice ended
    _open(scans, archive, *names[500:])
    got = [f for files in reader.preloads for f in files]
    assert len(got) == len(set(got)) == FILES - 2  # each file once, the first two alone


def test_a_jump_back_or_far_ahead_starts_the_count_again() -> None:
    scans, reader = _scans()
    archive = _archive()
    assert NEAR == 8  # the steps below: back 21 entries, then ahead 14
    _open(scans, archive, "d/f00030", "d/f00031", "d/f00010", "d/f00011")  # far back
    _open(scans, archive, "d/f00025", "d/f00026")  # far ahead
    assert reader.preloads == []
    _open(scans, archive, "d/f00027")  # the third in order from f00025
    assert len(reader.preloads) == 1


def test_readers_in_parallel_scan_with_steps_back() -> None:
    """As `xargs -P` opens the files: a few at once, out of order by a few."""
    scans, reader = _scans()
    archive = _archive()
    _open(scans, archive, "d/f00012", "d/f00010", "d/f00015", "d/f00011", "d/f00013")
    assert reader.preloads == []  # two in order (12, 15), the rest steps back
    _open(scans, archive, "d/f00017")
    [files] = reader.preloads
    assert files[0] == (_xet(17), 117)  # from the furthest file on


def test_a_subdirectory_between_files_does_not_break_a_scan() -> None:
    """`cp -r` copies d/f00004.sub's files between d/f00004 and d/f00005."""
    scans, reader = _scans()
    archive = _archive()
    _open(scans, archive, "d/f00003", "d/f00004", "d/f00004.sub/inner", "d/f00005")
    assert len(reader.preloads) == 1


def test_each_version_is_a_directory_of_its_own() -> None:
    scans, reader = _scans()
    _open(scans, _archive(1), "d/f00000", "d/f00001")
    _open(scans, _archive(2), "d/f00002")
    assert reader.preloads == []


def test_files_with_hard_links_are_not_followed() -> None:
    """Their inode is the group's first path: where the open was is not known."""
    scans, reader = _scans()
    archive = _archive()
    _open(scans, archive, "h/a", "h/b", "h/c")
    assert reader.preloads == []
