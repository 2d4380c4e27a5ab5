"""The FUSE operations: the namespace's inodes and the reader's bytes, read-only.

Every handler runs on the one trio thread and never blocks it: manifests load through the
catalog (worker threads), bytes through the ContentReader. A handler may raise only
FUSEError, since anything else would end pyfuse3.main() and the mount with it, so each is
wrapped: backend errors become their errno and unexpected ones EIO, with one log line.
"""

import errno
import functools
import json
import logging
import math
import os
import stat
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

import pyfuse3
import trio

from arkfs.archive.manifest import Kind, entry_erc
from arkfs.backend.base import BackendError, NotBound, Unauthorized
from arkfs.mount.chunk_cache import ChunkCache
from arkfs.mount.namespace import Listing, Namespace, Node, NodeKind
from arkfs.mount.reader import ContentReader, ReadError
from arkfs.mount.stats import MountStats
from arkfs.mount.xattrs import CACHED, STATS, ark_xattrs, file_xattrs, format_fraction

log = logging.getLogger(__name__)

BLOCK_SIZE = 1 << 20  # st_blksize and f_bsize: large, so readers ask for large reads
TIMEOUT = 3600.0  # entry and attribute timeout: content and names are immutable
DIR_MODE = stat.S_IFDIR | 0o555
INFO_MODE = stat.S_IFREG | 0o444
NAME_MAX = 255
SMALL_READ = 128 * 1024  # reads below this are not kernel readahead: offer the pages around
MAX_STORES = 8  # page stores running at once; more reads just skip the offer
PAGE = 4096


def _page_up(n: int) -> int:
    return -(-n // PAGE) * PAGE


def _page_down(n: int) -> int:
    return n // PAGE * PAGE


P = ParamSpec("P")
R = TypeVar("R")


def _errno(exc: BackendError) -> int:
    if isinstance(exc, NotBound):
        return errno.ENOENT
    if isinstance(exc, Unauthorized):
        return errno.EACCES
    return errno.EIO


def guarded(handler: Callable[P, Awaitable[R]]) -> Callable[P, Coroutine[Any, Any, R]]:
    """Let only FUSEError out of a handler: log anything else in one line, as EIO."""

    @functools.wraps(handler)
    async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return await handler(*args, **kwargs)
        except pyfuse3.FUSEError:
            raise
        except BackendError as exc:
            if not isinstance(exc, NotBound):
                log.error("%s: %s", handler.__name__, exc)
            raise pyfuse3.FUSEError(_errno(exc)) from None
        except Exception as exc:
            log.error("%s failed: %r", handler.__name__, exc)
            log.debug("%s failed", handler.__name__, exc_info=True)
            raise pyfuse3.FUSEError(errno.EIO) from None

    return wrapper


def _erofs() -> pyfuse3.FUSEError:
    return pyfuse3.FUSEError(errno.EROFS)


@dataclass(eq=False)
class _Handle:
    """An open file (data set for `?info` files) or directory (listing set)."""

    node: Node
    data: bytes | None = None
    listing: Listing | None = None


class ArkOperations(pyfuse3.Operations):
    """pyfuse3 handlers over a Namespace and a ContentReader."""

    supports_dot_lookup = False
    enable_writeback_cache = False
    enable_acl = False

    def __init__(
        self, namespace: Namespace, reader: ContentReader, stats: MountStats, cache: ChunkCache
    ) -> None:
        super().__init__()
        self.ns = namespace
        self.reader = reader
        self.stats = stats
        self.cache = cache
        self.started_ns = time.time_ns()
        self._uid, self._gid = os.getuid(), os.getgid()
        self._handles: dict[int, _Handle] = {}
        self._next_fh = 1
        self._store_pages = True  # until the kernel refuses FUSE_NOTIFY_STORE
        self._stores_running = 0

    # --- attributes ------------------------------------------------------------------------

    def _base_attrs(
        self, node: Node, mode: int, size: int, mtime_ns: int
    ) -> pyfuse3.EntryAttributes:
        a = pyfuse3.EntryAttributes()
        a.st_ino = pyfuse3.InodeT(node.ino)
        a.generation = 0
        a.entry_timeout = a.attr_timeout = TIMEOUT
        a.st_mode = pyfuse3.ModeT(mode)
        a.st_nlink = 1
        a.st_uid, a.st_gid = self._uid, self._gid
        a.st_rdev = 0
        a.st_size = size
        a.st_blksize = BLOCK_SIZE
        a.st_blocks = math.ceil(size / 512)
        a.st_atime_ns = a.st_ctime_ns = a.st_mtime_ns = mtime_ns
        return a

    async def _attrs(self, node: Node, provisional: bool = False) -> pyfuse3.EntryAttributes:
        """The attributes of node; provisional ones (not cached by the kernel) for an
        archive root whose manifest is not fetched yet, so readdir needs no manifests."""
        if node.kind in (NodeKind.ROOT, NodeKind.LABEL, NodeKind.NAAN):
            return self._base_attrs(node, DIR_MODE, 0, self.started_ns)
        if node.kind is NodeKind.ARCHIVE and node.archive is None and provisional:
            a = self._base_attrs(node, DIR_MODE, 0, self.started_ns)
            a.attr_timeout = 0
            return a
        archive = await self.ns.loaded(node)
        if node.kind is NodeKind.INFO:
            return self._base_attrs(node, INFO_MODE, len(self._info(node)), self._mtime(node))
        if node.kind is NodeKind.ARCHIVE:
            a = self._base_attrs(node, DIR_MODE, 0, self._mtime(node))
            a.st_nlink = 2 + archive.subdirs("")
            return a
        entry = archive.entry(node.index)
        size = entry.size
        if entry.kind is Kind.SYMLINK and entry.target is not None:
            size = len(os.fsencode(entry.target))
        a = self._base_attrs(node, entry.st_mode, size, entry.mtime_ns)
        if entry.kind is Kind.DIR:
            a.st_nlink = 2 + archive.subdirs(entry.path)
        return a

    def _mtime(self, node: Node) -> int:
        """An entry's mtime; the manifest's creation time for an archive root."""
        assert node.archive is not None
        if node.index >= 0:
            return node.archive.entry(node.index).mtime_ns
        return int(node.archive.manifest.created * 1e9)

    def _info(self, node: Node) -> bytes:
        """The ERC record (ANVL) an INFO node holds."""
        archive = node.archive
        assert archive is not None
        if node.index < 0:
            return archive.erc_anvl.encode()
        erc = entry_erc(archive.archive.erc, archive.ark, archive.entry(node.index))
        return erc.to_anvl().encode()

    # --- lookup and attributes -------------------------------------------------------------

    @guarded
    async def lookup(
        self, parent_inode: pyfuse3.InodeT, name: pyfuse3.FileNameT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        node = await self.ns.lookup(self.ns.get(parent_inode), os.fsdecode(name))
        attrs = await self._attrs(node)
        self.ns.remember(node)
        return attrs

    async def forget(self, inode_list: Sequence[tuple[pyfuse3.InodeT, int]]) -> None:
        try:
            for ino, count in inode_list:
                self.ns.forget(ino, count)
        except Exception as exc:  # forget has no reply to carry an error
            log.error("forget failed: %r", exc)

    @guarded
    async def getattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        return await self._attrs(self.ns.get(inode))

    @guarded
    async def readlink(self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext) -> bytes:
        node = self.ns.get(inode)
        if node.entry_kind is not Kind.SYMLINK or node.archive is None:
            raise pyfuse3.FUSEError(errno.EINVAL)
        target = node.archive.entry(node.index).target
        assert target is not None
        return os.fsencode(target)

    @guarded
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        loaded = self.ns.catalog.loaded()
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = BLOCK_SIZE
        s.f_blocks = math.ceil(sum(a.manifest.total_size for a in loaded) / BLOCK_SIZE)
        s.f_bfree = s.f_bavail = 0
        s.f_files = sum(len(a.manifest.entries) for a in loaded)
        s.f_ffree = s.f_favail = 0
        s.f_namemax = NAME_MAX
        return s

    # --- files -----------------------------------------------------------------------------

    def _new_handle(self, handle: _Handle) -> int:
        fh = self._next_fh
        self._next_fh += 1
        handle.node = self.ns.opened(handle.node)
        self._handles[fh] = handle
        return fh

    def _close_handle(self, fh: int) -> None:
        handle = self._handles.pop(fh, None)
        if handle is not None:
            self.ns.released(handle.node)

    @guarded
    async def open(
        self, inode: pyfuse3.InodeT, flags: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileInfo:
        node = self.ns.get(inode)
        if flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC:
            raise _erofs()
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        if node.kind is NodeKind.INFO:
            handle = _Handle(node, data=self._info(node))
        elif node.entry_kind is Kind.FILE:
            handle = _Handle(node)
        else:
            raise pyfuse3.FUSEError(errno.EINVAL)
        return pyfuse3.FileInfo(fh=pyfuse3.FileHandleT(self._new_handle(handle)), keep_cache=True)

    @guarded
    async def read(self, fh: pyfuse3.FileHandleT, off: int, size: int) -> bytes:
        handle = self._handles.get(fh)
        if handle is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        if handle.data is not None:
            return handle.data[off : off + size]
        archive = handle.node.archive
        assert archive is not None
        entry = archive.entry(handle.node.index)
        length = min(size, entry.size - off)
        if length <= 0:
            return b""
        assert entry.xet_hash is not None
        try:
            data = await self.reader.read(
                archive.backend, entry.xet_hash, entry.size, off, length, stream=fh
            )
        except ReadError as exc:
            log.error("read of %s at %d+%d: %s", handle.node.ark, off, length, exc)
            raise pyfuse3.FUSEError(errno.EIO) from None
        if len(data) != length:
            # A short read would look like the end of the file.
            log.error("read of %s at %d+%d: got %d bytes", handle.node.ark, off, length, len(data))
            raise pyfuse3.FUSEError(errno.EIO)
        if size < SMALL_READ:
            self._offer_pages(handle.node.ino, entry.xet_hash, entry.size, off, off + length)
        return data

    def _offer_pages(self, ino: int, file_hash: bytes, size: int, off: int, end: int) -> None:
        """After a small read, hand the kernel the rest of the chunks it needed.

        A 4 KiB random read costs the whole chunk (about 64 KiB) to load and verify; the
        kernel's readahead does not ask for the rest, so later reads in the same chunk
        would load it again. FUSE_NOTIFY_STORE puts those verified bytes in the page cache.
        It waits for page locks, and the kernel holds those of the read being answered, so
        it runs detached in a worker thread, never for the read's own pages.
        """
        if self._stores_running >= MAX_STORES or not self._store_pages:
            return
        around = self.reader.around(file_hash, size, off, end)
        if around is None:
            return
        start, data = around
        stop = start + len(data)
        pieces = [
            (_page_up(start), _page_down(off)),
            (_page_up(end), stop if stop == size else _page_down(stop)),
        ]
        pieces = [(a, b) for a, b in pieces if a < b]
        if pieces:
            self._stores_running += 1
            trio.lowlevel.spawn_system_task(self._hand_pages, ino, start, data, pieces)

    async def _hand_pages(
        self, ino: int, start: int, data: bytes, pieces: list[tuple[int, int]]
    ) -> None:
        """Put pieces [a, b) of the file, from data starting at start, in the kernel's page
        cache (FUSE_NOTIFY_STORE), one worker-thread call each."""
        try:
            for a, b in pieces:
                await trio.to_thread.run_sync(
                    pyfuse3.notify_store, ino, a, data[a - start : b - start]
                )
        except OSError as exc:  # e.g. ENOSYS: this kernel cannot take stores
            if self._store_pages:
                log.warning("cannot hand pages to the kernel (%s); not trying again", exc)
            self._store_pages = False
        except Exception:
            log.exception("handing pages to the kernel failed")
        finally:
            self._stores_running -= 1

    @guarded
    async def release(self, fh: pyfuse3.FileHandleT) -> None:
        self._close_handle(fh)
        self.reader.end_stream(fh)  # each open file is a stream of its own for prefetching

    # --- directories -----------------------------------------------------------------------

    @guarded
    async def opendir(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileHandleT:
        node = self.ns.get(inode)
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        listing = await self.ns.listing(node)
        return pyfuse3.FileHandleT(self._new_handle(_Handle(node, listing=listing)))

    @guarded
    async def readdir(
        self, fh: pyfuse3.FileHandleT, start_id: int, token: pyfuse3.ReaddirToken
    ) -> None:
        handle = self._handles.get(fh)
        if handle is None or handle.listing is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        listing = handle.listing
        # Offsets are positions in the listing taken at opendir, so a resumed readdir
        # continues exactly where the kernel's buffer filled up.
        for i in range(start_id, len(listing.names)):
            child = listing.make(i)
            attrs = await self._attrs(child, provisional=True)
            if not pyfuse3.readdir_reply(token, os.fsencode(listing.names[i]), attrs, i + 1):
                return
            self.ns.remember(child)  # readdirplus: the kernel counts a lookup per entry

    @guarded
    async def releasedir(self, fh: pyfuse3.FileHandleT) -> None:
        self._close_handle(fh)

    # --- extended attributes ---------------------------------------------------------------

    async def _xattrs(self, node: Node) -> dict[str, str]:
        if node.kind is NodeKind.ROOT:
            return {STATS: json.dumps(self.stats_json(), sort_keys=True)}
        if node.kind is NodeKind.ARCHIVE:
            archive = await self.ns.loaded(node)
            return ark_xattrs(archive.key, archive.archive.erc)
        if node.kind is not NodeKind.ENTRY or node.archive is None:
            return {}
        archive = node.archive
        entry = archive.entry(node.index)
        if entry.kind is Kind.SYMLINK:
            return {}
        ark = node.ark
        out = ark_xattrs(str(ark), entry_erc(archive.archive.erc, archive.ark, entry))
        if entry.kind is Kind.FILE:
            out.update(file_xattrs(entry))
            assert entry.xet_hash is not None
            out[CACHED] = format_fraction(self.reader.cached_fraction(entry.xet_hash, entry.size))
        return out

    def stats_json(self) -> dict[str, object]:
        """The mount's counters, the chunk cache's size, and what the mount holds."""
        out = self.stats.to_json()
        out.setdefault("cache_bytes", self.cache.used_bytes)
        out.setdefault("cache_limit", self.cache.max_bytes)
        out["archives_loaded"] = len(self.ns.catalog.loaded())
        out["inodes"] = len(self.ns)
        out["pid"] = os.getpid()
        return out

    @guarded
    async def getxattr(
        self, inode: pyfuse3.InodeT, name: pyfuse3.XAttrNameT, ctx: pyfuse3.RequestContext
    ) -> bytes:
        if not name.startswith(b"user."):  # ls asks every file for security.* and system.*
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        value = (await self._xattrs(self.ns.get(inode))).get(os.fsdecode(name))
        if value is None:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        return value.encode()

    @guarded
    async def listxattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> list[pyfuse3.XAttrNameT]:
        names = await self._xattrs(self.ns.get(inode))
        return [pyfuse3.XAttrNameT(os.fsencode(n)) for n in names]

    # --- writes: a read-only filesystem (the `ro` option stops most before they get here) ---

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
