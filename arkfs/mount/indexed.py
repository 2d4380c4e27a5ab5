"""An archive version ready for the namespace: its manifest indexed by path and by directory."""

from dataclasses import dataclass

from arkfs.archive.manifest import Entry, Kind, Manifest
from arkfs.archive.record import Archive
from arkfs.ark.erc import Erc
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend


@dataclass(eq=False)
class IndexedArchive:
    """An archive ready for the namespace: its manifest indexed by path and by directory."""

    ark: Ark
    record: Archive
    backend: Backend  # where its file contents are read
    index: dict[str, int]  # entry path -> position in manifest.entries
    children: dict[str, list[int]]  # directory path ('' the root) -> child positions
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
        return self.record.manifest.entries[index]

    def subdirs(self, path: str) -> int:
        """How many directories directory path holds."""
        return self.subdir_counts.get(path, 0)

    @classmethod
    def build(cls, archive: Archive, backend: Backend) -> "IndexedArchive":
        """Index an archive (blocking: run it in a worker thread)."""
        index: dict[str, int] = {}
        children: dict[str, list[int]] = {"": []}
        subdirs: dict[str, int] = {}
        for i, entry in enumerate(archive.manifest.entries):
            index[entry.path] = i
            children.setdefault(entry.parent, []).append(i)
            if entry.kind is Kind.DIR:
                children.setdefault(entry.path, [])
                subdirs[entry.parent] = subdirs.get(entry.parent, 0) + 1
        ark = parse(archive.manifest.ark)
        return cls(ark, archive, backend, index, children, subdirs, archive.erc.to_anvl())
