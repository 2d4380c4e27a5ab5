"""Every write operation of a FUSE filesystem, refused with EROFS.

The `ro` mount option stops most writes in the kernel before they reach the daemon; these
answer whatever still arrives.
"""

import errno

import pyfuse3


def _erofs() -> pyfuse3.FUSEError:
    return pyfuse3.FUSEError(errno.EROFS)


class ReadOnlyOperations(pyfuse3.Operations):
    """pyfuse3 operations that refuse every change."""

    async def setattr(self, *args: object) -> pyfuse3.EntryAttributes:
        raise _erofs()

    async def mknod(self, *args: object) -> pyfuse3.EntryAttributes:
        raise _erofs()

    async def mkdir(self, *args: object) -> pyfuse3.EntryAttributes:
        raise _erofs()

    async def unlink(self, *args: object) -> None:
        raise _erofs()

    async def rmdir(self, *args: object) -> None:
        raise _erofs()

    async def symlink(self, *args: object) -> pyfuse3.EntryAttributes:
        raise _erofs()

    async def rename(self, *args: object) -> None:
        raise _erofs()

    async def link(self, *args: object) -> pyfuse3.EntryAttributes:
        raise _erofs()

    async def write(self, *args: object) -> int:
        raise _erofs()

    async def create(self, *args: object) -> tuple[pyfuse3.FileInfo, pyfuse3.EntryAttributes]:
        raise _erofs()

    async def setxattr(self, *args: object) -> None:
        raise _erofs()

    async def removexattr(self, *args: object) -> None:
        raise _erofs()
