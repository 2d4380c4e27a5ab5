"""The ceiling of a pyfuse3 filesystem: one file served from memory, nothing else.

`python trivialfs.py SOURCE MOUNTPOINT` loads SOURCE into memory, mounts it read-only as
MOUNTPOINT/data with keep_cache, raises the FUSE readahead to 1 MiB as arkfs does, prints
"ready" and serves until unmounted (fusermount3 -u) or sent SIGTERM. What arkfs loses
against this is what its own data path costs.
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


class MemoryFile(pyfuse3.Operations):
    """A root directory holding one read-only file whose bytes are in memory."""

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = memoryview(data)

    def _attr(self, inode: pyfuse3.InodeT) -> pyfuse3.EntryAttributes:
        attr = pyfuse3.EntryAttributes()
        attr.st_ino = inode
        if inode == pyfuse3.ROOT_INODE:
            attr.st_mode = stat.S_IFDIR | 0o555
            attr.st_nlink = 2
        else:
            attr.st_mode = stat.S_IFREG | 0o444
            attr.st_nlink = 1
            attr.st_size = len(self.data)
        attr.st_blksize = 1 << 20
        attr.attr_timeout = attr.entry_timeout = 3600
        return attr

    async def getattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        if inode not in (pyfuse3.ROOT_INODE, FILE_INODE):
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self._attr(inode)

    async def lookup(
        self, parent: pyfuse3.InodeT, name: bytes, ctx: pyfuse3.RequestContext | None = None
    ) -> pyfuse3.EntryAttributes:
        if parent != pyfuse3.ROOT_INODE or name != NAME:
            raise pyfuse3.FUSEError(errno.ENOENT)
        return self._attr(FILE_INODE)

    async def opendir(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileHandleT:
        return pyfuse3.FileHandleT(inode)

    async def readdir(
        self, fh: pyfuse3.FileHandleT, start_id: int, token: pyfuse3.ReaddirToken
    ) -> None:
        if start_id == 0:
            pyfuse3.readdir_reply(token, pyfuse3.FileNameT(NAME), self._attr(FILE_INODE), 1)

    async def open(
        self, inode: pyfuse3.InodeT, flags: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileInfo:
        if inode != FILE_INODE:
            raise pyfuse3.FUSEError(errno.EISDIR)
        return pyfuse3.FileInfo(fh=pyfuse3.FileHandleT(inode), keep_cache=True)

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
    """Load the file, mount, serve until unmounted."""
    source, mountpoint = Path(sys.argv[1]), Path(os.path.realpath(sys.argv[2]))
    ops = MemoryFile(source.read_bytes())
    pyfuse3.init(ops, str(mountpoint), {"ro", "fsname=trivialfs", "subtype=trivialfs"})
    try:
        trio.run(_serve, mountpoint)
    finally:
        pyfuse3.close(unmount=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
