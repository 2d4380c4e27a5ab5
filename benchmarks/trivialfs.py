"""The floor of a pyfuse3 filesystem: what arkfs would cost if its own work cost nothing.

`python trivialfs.py SOURCE MOUNTPOINT` mounts SOURCE read-only at MOUNTPOINT, prints
"ready" and serves until unmounted (fusermount3 -u) or sent SIGTERM. The readahead is
raised to 1 MiB as arkfs does. SOURCE is either
- a file: its bytes are loaded into memory and served as MOUNTPOINT/data, keep_cache;
- a directory: its whole tree is served with every name and attribute in memory
  (precomputed, with arkfs's one-hour timeouts), and getxattr answers ENODATA as arkfs
  does, so `ls -l` makes the same round trips; file contents are read from SOURCE.
What arkfs loses against this is what its own data or metadata path costs.
"""

import errno
import os
import signal
import stat
import sys
from pathlib import Path

import pyfuse3
import trio

NAME = b"data"
FILE_INODE = pyfuse3.InodeT(pyfuse3.ROOT_INODE + 1)
READAHEAD_KB = 1024
TIMEOUT = 3600.0


def _attr(ino: int, mode: int, size: int, nlink: int) -> pyfuse3.EntryAttributes:
    attr = pyfuse3.EntryAttributes()
    attr.st_ino = pyfuse3.InodeT(ino)
    attr.st_mode = pyfuse3.ModeT(mode)
    attr.st_nlink = nlink
    attr.st_size = size
    attr.st_blksize = 1 << 20
    attr.st_blocks = (size + 511) // 512
    attr.attr_timeout = attr.entry_timeout = TIMEOUT
    return attr


class MemoryTree(pyfuse3.Operations):
    """A directory tree whose names and attributes are all in memory, built once."""

    def __init__(self, root: Path | None = None) -> None:
        super().__init__()
        self.attrs: dict[int, pyfuse3.EntryAttributes] = {}
        self.paths: dict[int, str] = {}  # file inode -> its path under root
        self.children: dict[int, list[tuple[bytes, int]]] = {}  # dir inode -> (name, inode)
        self.names: dict[int, dict[bytes, int]] = {}
        if root is not None:
            self._add(pyfuse3.ROOT_INODE, str(root))

    def _add(self, ino: int, path: str) -> int:
        """Enter the directory at path as ino, and everything under it; the next free inode."""
        entries = sorted(os.scandir(path), key=lambda e: e.name)
        listing, subdirs, next_ino = [], 0, ino + 1
        for entry in entries:
            child, next_ino = next_ino, next_ino + 1
            listing.append((os.fsencode(entry.name), child))
            if entry.is_dir(follow_symlinks=False):
                subdirs += 1
                next_ino = self._add(child, entry.path)
            else:
                size = entry.stat(follow_symlinks=False).st_size
                self.attrs[child] = _attr(child, stat.S_IFREG | 0o444, size, 1)
                self.paths[child] = entry.path
        self._directory(ino, listing, subdirs)
        return next_ino

    def _directory(self, ino: int, listing: list[tuple[bytes, int]], subdirs: int) -> None:
        self.attrs[ino] = _attr(ino, stat.S_IFDIR | 0o555, 0, 2 + subdirs)
        self.children[ino] = listing
        self.names[ino] = dict(listing)

    async def getattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        return self.attrs[inode]

    async def lookup(
        self, parent: pyfuse3.InodeT, name: bytes, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        child = self.names.get(parent, {}).get(name)
        if child is None:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self.attrs[child]

    async def opendir(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileHandleT:
        return pyfuse3.FileHandleT(inode)

    async def readdir(
        self, fh: pyfuse3.FileHandleT, start_id: int, token: pyfuse3.ReaddirToken
    ) -> None:
        listing, attrs = self.children[fh], self.attrs
        for i in range(start_id, len(listing)):
            name, child = listing[i]
            if not pyfuse3.readdir_reply(token, pyfuse3.FileNameT(name), attrs[child], i + 1):
                return

    async def getxattr(
        self, inode: pyfuse3.InodeT, name: pyfuse3.XAttrNameT, ctx: pyfuse3.RequestContext
    ) -> bytes:
        raise pyfuse3.FUSEError(pyfuse3.ENOATTR)

    async def open(
        self, inode: pyfuse3.InodeT, flags: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileInfo:
        if inode in self.children:
            raise pyfuse3.FUSEError(errno.EISDIR)
        return pyfuse3.FileInfo(fh=pyfuse3.FileHandleT(inode), keep_cache=True)

    async def read(self, fh: pyfuse3.FileHandleT, off: int, size: int) -> bytes:
        with open(self.paths[fh], "rb") as f:
            f.seek(off)
            return f.read(size)


class MemoryFile(MemoryTree):
    """A root directory holding one read-only file whose bytes are in memory."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = memoryview(data)
        self.attrs[FILE_INODE] = _attr(FILE_INODE, stat.S_IFREG | 0o444, len(data), 1)
        self._directory(pyfuse3.ROOT_INODE, [(NAME, FILE_INODE)], 0)

    async def read(self, fh: pyfuse3.FileHandleT, off: int, size: int) -> bytes:
        return bytes(self.data[off : off + size])


def _bdi(mountpoint: Path) -> str:
    """The major:minor of the mount at mountpoint, from mountinfo (touches no mount)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == str(mountpoint):
                return fields[2]
    raise RuntimeError(f"{mountpoint} is not in /proc/self/mountinfo")


async def _until_signal() -> None:
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for _ in signals:
            pyfuse3.terminate()
            return


async def _serve(mountpoint: Path) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_until_signal)
        nursery.start_soon(_main, nursery.cancel_scope)
        # The kernel sets the readahead when the loop answers INIT: raise it after that.
        await trio.to_thread.run_sync(os.stat, mountpoint)
        with open(f"/sys/class/bdi/{_bdi(mountpoint)}/read_ahead_kb", "w") as f:
            f.write(str(READAHEAD_KB))
        print("ready", flush=True)


async def _main(scope: trio.CancelScope) -> None:
    await pyfuse3.main()
    scope.cancel()


def main() -> int:
    """Load the file or the tree, mount, serve until unmounted."""
    source, mountpoint = Path(sys.argv[1]), Path(os.path.realpath(sys.argv[2]))
    ops = MemoryTree(source) if source.is_dir() else MemoryFile(source.read_bytes())
    pyfuse3.init(ops, str(mountpoint), {"ro", "fsname=trivialfs", "subtype=trivialfs"})
    try:
        trio.run(_serve, mountpoint)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
