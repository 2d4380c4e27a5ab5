"""What stat shows for each node: mode, size, times and link counts, cached by the kernel.

A version never changes, so the kernel may cache its names and attributes for TIMEOUT. What
shows the latest version (the archive root's attributes, the names in it, its `?info`) it
may cache only until the latest is checked again (Node.follows_latest).
"""

import os
import stat
import time
from collections.abc import Sequence
from dataclasses import dataclass

import pyfuse3

from arkfs.archive.manifest import entry_erc
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.mount.names.namespace import EntryView, Namespace, Node, NodeKind

BLOCK_SIZE = 1 << 20  # st_blksize and f_bsize: large, so readers ask for large reads
TIMEOUT = 3600.0  # entry and attribute timeout of what never changes
DIR_MODE = stat.S_IFDIR | 0o555
INFO_MODE = stat.S_IFREG | 0o444
OBJECT_TIMEOUT = 60.0  # entry and attribute timeout of an object found by discovery


def info_record(node: Node) -> bytes:
    """The ERC record (ANVL) an INFO node holds: its version's, told of its subject."""
    archive, root = node.archive, node.root_ark
    assert archive is not None and root is not None
    if node.index < 0:
        return archive.erc_anvl.encode()
    erc = entry_erc(archive.erc, root, archive.entry(node.index))
    return erc.to_anvl().encode()


@dataclass(frozen=True)
class Ownership:
    """Who owns every node, and the permission bits masked off every mode."""

    uid: int
    gid: int
    umask: int = 0

    @classmethod
    def mounting_user(cls) -> "Ownership":
        """The user running the mount, with no mask."""
        return cls(os.getuid(), os.getgid())


class Attributes:
    """The attributes of the namespace's nodes, owned as the mount says (by default by the
    user running it)."""

    def __init__(self, ns: Namespace, owner: Ownership | None = None) -> None:
        self.ns = ns
        self.started_ns = time.time_ns()
        self.owner = owner or Ownership.mounting_user()
        self._uid, self._gid = self.owner.uid, self.owner.gid
        self._keep_bits = ~self.owner.umask

    def _base(self, ino: int, mode: int, size: int, mtime_ns: int) -> pyfuse3.EntryAttributes:
        """Attributes of node, cached for TIMEOUT; one link (a new EntryAttributes has
        generation 0, st_rdev 0 and st_nlink 1: readdir makes one per entry)."""
        a = pyfuse3.EntryAttributes()
        a.st_ino = pyfuse3.InodeT(ino)
        a.entry_timeout = a.attr_timeout = TIMEOUT
        a.st_mode = pyfuse3.ModeT(mode & self._keep_bits)
        a.st_uid = self._uid
        a.st_gid = self._gid
        a.st_size = size
        a.st_blksize = BLOCK_SIZE
        a.st_blocks = -(-size // 512)
        a.st_atime_ns = a.st_ctime_ns = a.st_mtime_ns = mtime_ns
        return a

    def dot(self, ino: int) -> pyfuse3.EntryAttributes:
        """What readdir gives for `.` and `..`: the directory's inode and type (the kernel
        takes no attributes from these two entries, and counts no lookup of them)."""
        a = pyfuse3.EntryAttributes()
        a.st_ino = pyfuse3.InodeT(ino)
        a.st_mode = pyfuse3.ModeT(DIR_MODE & self._keep_bits)
        return a

    async def of(self, node: Node, provisional: bool = False) -> pyfuse3.EntryAttributes:
        """The attributes of node; provisional ones (not cached by the kernel) for an
        archive root whose manifest is not fetched yet, so readdir needs no manifests."""
        a = self.at_hand(node, provisional)
        if a is None:  # an archive root: its latest version, checked again when due
            a = self._of_loaded(node, await self.ns.loaded(node))
            a.attr_timeout = self.ns.latest.time_left(node.key)
        return a

    def at_hand(self, node: Node, provisional: bool = False) -> pyfuse3.EntryAttributes | None:
        """The attributes of node when they need no wait (all but a loaded archive root's),
        else None: readdir and lookup answer from memory without awaiting."""
        if node.kind is NodeKind.ENTRY:  # first: a lookup's path
            assert node.archive is not None
            a = self._of_entry(node.ino, node.archive, node.index)
            if node.follows_latest:
                a.entry_timeout = self.ns.latest.time_left(node.key)
            return a
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL, NodeKind.NAAN):
            return self._base(node.ino, DIR_MODE, 0, self.started_ns)
        if node.obj is not None:  # may change at its responder: asked again after a while
            a = self._base(node.ino, INFO_MODE, node.obj.size, self.started_ns)
            a.entry_timeout = a.attr_timeout = OBJECT_TIMEOUT
            return a
        if node.kind is NodeKind.ARCHIVE:
            if node.archive is not None or not provisional:
                return None
            a = self._base(node.ino, DIR_MODE, 0, self.started_ns)
            a.attr_timeout = 0
            return a
        assert node.archive is not None, node
        a = self._of_loaded(node, node.archive)
        if node.follows_latest:
            a.entry_timeout = self.ns.latest.time_left(node.key)
        return a

    def _of_loaded(self, node: Node, archive: IndexedArchive) -> pyfuse3.EntryAttributes:
        if node.kind is NodeKind.INFO:
            return self._base(node.ino, INFO_MODE, len(info_record(node)), self._mtime(node))
        if node.kind in (NodeKind.ARCHIVE, NodeKind.VERSION):
            root = archive.manifest.top
            a = self._base(node.ino, stat.S_IFDIR | root.mode, 0, root.mtime_ns)
            a.st_nlink = 2 + archive.subdirs("")
            return a
        return self._of_entry(node.ino, archive, node.index)

    def rows(self, view: EntryView, positions: Sequence[int], names: list[bytes]) -> "Rows":
        """Readdir's rows of a directory of view whose children are at positions: what
        _of_entry gives each, in columns made in a few passes at opendir."""
        entries = view.archive.entries
        modes, sizes, mtimes, dirs = entries.stats(positions)
        keep = self._keep_bits
        nlinks = [1] * len(positions)
        if entries.has_links:  # hard links: their group's size
            nlinks = [entries.link_count(p) for p in positions]
        for i in dirs:
            nlinks[i] = 2 + view.archive.subdirs(entries.path(positions[i]))
        base = view.base + 1
        return Rows(
            names,
            [base + p for p in positions],
            [m & keep for m in modes],
            sizes,
            mtimes,
            nlinks,
            self._base(0, 0, 0, 0),
        )

    def entry_timeout(self, view: EntryView, positions: Sequence[int]) -> float:
        """How long the kernel may keep the names of a listing of view: a name in the
        archive root follows the latest (as Node.follows_latest says)."""
        if positions and not view.pinned and view.archive.entries.at_top(positions[0]):
            return self.ns.latest.time_left(view.key)
        return TIMEOUT

    def _of_entry(self, ino: int, archive: IndexedArchive, index: int) -> pyfuse3.EntryAttributes:
        """An entry's attributes, from the manifest's columns (no Entry is made)."""
        mode, size, mtime_ns = archive.entries.stat(index)
        a = self._base(ino, mode, size, mtime_ns)
        if stat.S_ISDIR(mode):
            a.st_nlink = 2 + archive.subdirs(archive.entries.path(index))
        elif archive.entries.has_links and stat.S_ISREG(mode):
            a.st_nlink = archive.entries.link_count(index)  # hard links: their group's size
        return a

    def _mtime(self, node: Node) -> int:
        """An entry's mtime; the manifest's creation time for an archive or version root."""
        assert node.archive is not None
        if node.index >= 0:
            return node.archive.entry(node.index).mtime_ns
        return int(node.archive.manifest.created * 1e9)


@dataclass(eq=False, slots=True)
class Rows:
    """The entries of one directory listing as readdirplus replies with them, in columns;
    template holds what every entry shares (owner, block size, timeouts)."""

    names: list[bytes]
    inos: list[int]
    modes: list[int]
    sizes: list[int]
    mtimes: list[int]
    nlinks: list[int]
    template: pyfuse3.EntryAttributes

    def reply(self, token: pyfuse3.ReaddirToken, first: int, offset: int, timeout: float) -> int:
        """readdir_reply rows first, first + 1, ... (row i at offset i + offset) until the
        kernel's buffer is full; the row it stopped at. One EntryAttributes is filled for
        them all: readdir_reply copies it into the buffer at once."""
        a, reply = self.template, pyfuse3.readdir_reply
        a.entry_timeout = timeout
        names, inos, modes, sizes, mtimes, nlinks = (
            self.names,
            self.inos,
            self.modes,
            self.sizes,
            self.mtimes,
            self.nlinks,
        )
        for i in range(first, len(names)):
            a.st_ino = inos[i]
            a.st_mode = modes[i]
            a.st_size = size = sizes[i]
            a.st_blocks = -(-size // 512)
            a.st_atime_ns = a.st_ctime_ns = a.st_mtime_ns = mtimes[i]
            a.st_nlink = nlinks[i]
            if not reply(token, names[i], a, i + offset):
                return i
        return len(names)
