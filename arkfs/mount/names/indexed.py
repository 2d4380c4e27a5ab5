"""An archive version ready for the namespace: its manifest indexed by path and by directory.

The manifest's columns (arkfs.archive.manifest.Entries) are the index: a path is found by
bisection, a directory's children through one array ordered by parent, so a 1,000,000-file
archive holds no Python object per entry until one is looked up.
"""

import contextlib
import ctypes
from collections.abc import Sequence
from dataclasses import dataclass

from arkfs.archive.manifest import Entries, Entry, Manifest
from arkfs.archive.record import Archive
from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend


class Positions:
    """Entry path -> position in manifest.entries, as a read-only mapping's get."""

    def __init__(self, entries: Entries) -> None:
        self._entries = entries

    def get(self, path: str, default: int | None = None) -> int | None:
        found = self._entries.position(path)
        return default if found is None else found


class Children:
    """Directory path ('' the root) -> its children's positions, in name order."""

    def __init__(self, entries: Entries) -> None:
        self._entries = entries

    def get(self, path: str, default: Sequence[int] = ()) -> Sequence[int]:
        return self._entries.children(path) or default


@dataclass(eq=False)
class IndexedArchive:
    """An archive ready for the namespace: its manifest indexed by path and by directory."""

    ark: Ark
    record: Archive
    entries: Entries  # record.manifest.entries, one attribute away (readdir asks per entry)
    backend: Backend  # where its file contents are read
    index: Positions
    children: Children
    subdir_counts: dict[str, int]  # directory path -> how many directories it holds
    erc_anvl: str

    @property
    def key(self) -> str:
        """The archive's normalized ark:NAAN/Name (without a version)."""
        return str(self.ark)

    @property
    def version(self) -> int:
        """Which version of the archive this is."""
        return self.record.version.version

    @property
    def manifest(self) -> Manifest:
        return self.record.manifest

    @property
    def erc(self) -> Erc:
        return self.record.erc

    def entry(self, index: int) -> Entry:
        return self.entries[index]

    def subdirs(self, path: str) -> int:
        """How many directories directory path holds."""
        return self.subdir_counts.get(path, 0)

    @classmethod
    def build(cls, archive: Archive, backend: Backend) -> "IndexedArchive":
        """Index an archive (blocking: run it in a worker thread)."""
        entries = archive.manifest.entries
        subdirs: dict[str, int] = {}
        for path in entries.directories():
            parent = path.rpartition("/")[0]
            subdirs[parent] = subdirs.get(parent, 0) + 1
        entries.children("")  # builds the children index here, not in the trio thread
        _trim_heap()
        ark = parse(archive.manifest.ark)
        return cls(
            ark,
            archive,
            entries,
            backend,
            Positions(entries),
            Children(entries),
            subdirs,
            archive.erc.to_anvl(),
        )


def _trim_heap() -> None:
    """Give the memory freed while a manifest was parsed back to the system (glibc only).

    Its columns are copied out of blobs of tens of MB; once freed, glibc keeps them in the
    heap (its mmap threshold grows with such frees): 165 MB of a 1M-file mount's RSS.
    """
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL(None).malloc_trim(0)
