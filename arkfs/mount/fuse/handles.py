"""Open files and directories: what each FUSE file handle holds."""

import errno
from dataclasses import dataclass

import pyfuse3

from arkfs.mount.fuse.attributes import Rows
from arkfs.mount.names.namespace import InodeTable, Listing, Node
from arkfs.resolver.objects import RemoteObject


@dataclass(eq=False)
class Handle:
    """An open file (data set for `?info` files) or directory (listing set)."""

    node: Node
    data: bytes | None = None
    obj: RemoteObject | None = None  # a plain object's record as opened: reads keep to it
    served: bool = False  # has any byte of obj been read?
    listing: Listing | None = None
    rows: Rows | None = None  # a directory of an archive: its listing's readdir rows


class Handles:
    """File handles by number; each keeps its node alive in the inode table while open."""

    def __init__(self, inodes: InodeTable) -> None:
        self._inodes = inodes
        self._open: dict[int, Handle] = {}
        self._next = 1

    def add(self, handle: Handle) -> pyfuse3.FileHandleT:
        """Open handle: its new number."""
        fh = self._next
        self._next += 1
        handle.node = self._inodes.opened(handle.node)
        self._open[fh] = handle
        return pyfuse3.FileHandleT(fh)

    def get(self, fh: int) -> Handle:
        """The open handle fh; EBADF if there is none."""
        handle = self._open.get(fh)
        if handle is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        return handle

    def close(self, fh: int) -> None:
        """Close fh (if open), letting its node go."""
        handle = self._open.pop(fh, None)
        if handle is not None:
            self._inodes.released(handle.node)
