"""Directory scans: `cp -r`, `tar`, `rsync` and `find -exec` open a directory's files one
after another, in path order (GNU cp in inode order, which is path order here: inodes
follow manifest positions), and each small file alone would cost a reconstruction
request and a xorb range.

When SCAN files of a directory have been opened in order (each at most NEAR entries past
the one before; a step back of at most NEAR entries, as readers in parallel make, `xargs
-P`, neither counts nor breaks the order), the directory counts as scanned: the maps of
the small files (up to READ_AHEAD bytes) among its next SLICE entries are preloaded,
many to a request where the backend answers batches, many to a thread call where they
are on disk (map_loader.py), and a read of each then brings the next files' chunks along
(chunk_loader.py), as `arkfs get` reads a directory. The next slice starts when the scan
is half way through the last. A reader of one file, or of files in random order, starts
nothing (a random reader of 10,000 files opens SCAN in order about once in a million
opens), so it does not pay for bytes it will not read. Not followed: a file with hard
links (its inode is its group's first path, which may be elsewhere), and two scans of
one directory at once (they reset each other's count); `diff -r` in a locale that sorts
names otherwise than byte order is a scan only where the two orders agree.
"""

from bisect import bisect_left
from typing import NamedTuple

from arkfs.archive.manifest import Entries, Kind
from arkfs.mount.data.chunk_loader import READ_AHEAD
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.util.lru import LRU

SCAN = 3  # files opened in order before a directory counts as scanned
NEAR = 8  # entries past the last file opened that the next may be and still be in order
SLICE = 1000  # entries whose small files' maps are preloaded at a time, ahead of the scan
DIRECTORIES = 64  # directories followed at once (two `cp -r` at a time, a tree's depth)


class _Scan(NamedTuple):
    """Where a scan of one directory is: the furthest file opened, how many files before
    it were opened in order, and the first entry not preloaded yet (positions among the
    directory's entries, in path order)."""

    last: int
    run: int
    until: int


class Scans:
    """Follows the files opened in each directory, and preloads ahead of a scan."""

    def __init__(self, reader: ContentReader) -> None:
        self._reader = reader
        self._dirs: LRU[tuple[str, int, int], _Scan] = LRU(DIRECTORIES)

    def opened(self, archive: IndexedArchive, index: int) -> None:
        """Note that the file at manifest position index was opened, and preload ahead if
        that continues a scan of its directory."""
        entries = archive.entries
        if entries.link_count(index) > 1:
            return
        siblings = entries.siblings(index)
        at = bisect_left(siblings, index)  # positions are in path order, so in name order
        key = (archive.key, archive.version, entries.parent(index))
        scan = self._dirs.get(key) or _Scan(-2 * NEAR, 0, 0)
        if scan.last < at <= scan.last + NEAR:  # the next in order
            last, run = at, scan.run + 1
        elif scan.last - NEAR <= at <= scan.last:  # a step back: readers in parallel
            last, run = scan.last, scan.run
        else:
            last, run = at, 0
        until = scan.until
        if run + 1 >= SCAN and until - last < SLICE // 2 and until < len(siblings):
            start = max(until, last)
            until = min(start + SLICE, len(siblings))
            files = [f for i in siblings[start:until] if (f := _small_file(entries, i))]
            if files:
                self._reader.preload(archive.backend, files)
        self._dirs.put(key, _Scan(last, run, until))


def _small_file(entries: Entries, i: int) -> tuple[bytes, int] | None:
    """(XET hash, size) of the entry at position i if it is a file of 1 to READ_AHEAD
    bytes: a big file gains little from a batch, and its map is big to hold."""
    if entries.kind(i) is not Kind.FILE:
        return None
    xet_hash, size = entries.hashes(i)[0], entries.stat(i)[1]
    return (xet_hash, size) if xet_hash is not None and 0 < size <= READ_AHEAD else None
