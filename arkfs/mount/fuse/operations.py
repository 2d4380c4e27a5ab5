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
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

import pyfuse3

from arkfs.archive.manifest import Kind, entry_erc
from arkfs.backend.base import BackendError, NotBound, Unauthorized
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.errors import ReadError, StaleObject
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.fuse.attributes import BLOCK_SIZE, Attributes, Ownership, info_record
from arkfs.mount.fuse.handles import Handle, Handles
from arkfs.mount.fuse.page_offers import PageOffers
from arkfs.mount.fuse.readonly import ReadOnlyOperations
from arkfs.mount.fuse.scans import Scans
from arkfs.mount.fuse.xattrs import (
    CACHED,
    STATS,
    ark_xattrs,
    file_xattrs,
    format_fraction,
    listed,
    object_xattrs,
    root_xattrs,
    source_xattrs,
    url_xattr,
    versions_xattr,
)
from arkfs.mount.names.namespace import NAME_MAX, Namespace, Node, NodeKind
from arkfs.mount.stats import MountStats

log = logging.getLogger(__name__)

DOT, DOTDOT = pyfuse3.FileNameT(b"."), pyfuse3.FileNameT(b"..")
DOTS = 2  # readdir offsets of `.` and `..` come before the listing's
SMALL_READ = 128 * 1024  # reads below this are not kernel readahead: offer the pages around
# ENOSYS, not EOPNOTSUPP: only ENOSYS makes the kernel stop sending getxattr (listxattr) for
# the rest of the mount, answering EOPNOTSUPP itself (measured: README, Performance).
NO_XATTRS = errno.ENOSYS


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


class ArkOperations(ReadOnlyOperations):
    """pyfuse3 handlers over a Namespace and a ContentReader."""

    supports_dot_lookup = False
    enable_writeback_cache = False
    enable_acl = False

    def __init__(
        self,
        namespace: Namespace,
        reader: ContentReader,
        stats: MountStats,
        cache: ChunkCache,
        owner: Ownership | None = None,
        xattrs: bool = True,
        hide_xattrs: bool = False,
    ) -> None:
        super().__init__()
        self.xattrs = xattrs  # False (-o noxattr): no xattrs, and the kernel stops asking
        self.hide_xattrs = hide_xattrs  # True (-o hide_xattrs): list none of arkfs's own
        self.ns = namespace
        self.reader = reader
        self.stats = stats
        self.cache = cache
        self.attrs = Attributes(namespace, owner)
        self._handles = Handles(namespace.inodes)
        self._pages = PageOffers(reader)
        self._scans = Scans(reader)

    def close(self) -> None:
        """Finish the page stores under way; before pyfuse3.close()."""
        self._pages.close()

    # --- lookup and attributes -------------------------------------------------------------

    @guarded
    async def lookup(
        self, parent_inode: pyfuse3.InodeT, name: pyfuse3.FileNameT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        node = await self.ns.lookup(self.ns.inodes.get(parent_inode), os.fsdecode(name))
        attrs = self.attrs.at_hand(node) or await self.attrs.of(node)
        self.ns.inodes.remember(node)
        return attrs

    async def forget(self, inode_list: Sequence[tuple[pyfuse3.InodeT, int]]) -> None:
        try:
            for ino, count in inode_list:
                self.ns.inodes.forget(ino, count)
        except Exception as exc:  # forget has no reply to carry an error
            log.error("forget failed: %r", exc)

    @guarded
    async def getattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.EntryAttributes:
        return await self.attrs.of(self.ns.inodes.get(inode))

    @guarded
    async def readlink(self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext) -> bytes:
        node = self.ns.inodes.get(inode)
        if node.entry_kind is not Kind.SYMLINK or node.archive is None:
            raise pyfuse3.FUSEError(errno.EINVAL)
        target = node.archive.entry(node.index).target
        assert target is not None
        return os.fsencode(target)

    @guarded
    async def statfs(self, ctx: pyfuse3.RequestContext) -> pyfuse3.StatvfsData:
        """The chunk cache and the inodes, as CVMFS reports them: the cache's limit as the
        size and its bytes as used; as inodes, those of the loaded manifests and the
        nodes held, of which only the entries the kernel holds are used (CVMFS: the
        catalogs' inodes, free unless loaded), so `df -i` never shows 100%."""
        loaded = self.ns.catalog.loaded()
        s = pyfuse3.StatvfsData()
        s.f_bsize = s.f_frsize = BLOCK_SIZE
        s.f_blocks = math.ceil(self.cache.max_bytes / BLOCK_SIZE)
        used = math.ceil(self.cache.used_bytes / BLOCK_SIZE)
        s.f_bfree = s.f_bavail = max(0, s.f_blocks - used)
        held = self.ns.inodes
        s.f_files = sum(len(a.manifest.entries) for a in loaded) + len(held)
        s.f_ffree = s.f_favail = s.f_files - held.entries
        s.f_namemax = NAME_MAX
        return s

    # --- files -----------------------------------------------------------------------------

    @guarded
    async def open(
        self, inode: pyfuse3.InodeT, flags: int, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileInfo:
        node = self.ns.inodes.get(inode)
        log.debug("open inode %d (%s) by pid %d", inode, node.kind.value, ctx.pid)
        if flags & os.O_ACCMODE != os.O_RDONLY or flags & os.O_TRUNC:
            raise pyfuse3.FUSEError(errno.EROFS)
        if node.is_dir:
            raise pyfuse3.FUSEError(errno.EISDIR)
        if node.kind is NodeKind.INFO:
            handle = Handle(node, data=info_record(node))
        elif node.obj is not None:  # it may change at its responder: no page cache kept
            handle = Handle(node, obj=node.obj)
            return pyfuse3.FileInfo(fh=self._handles.add(handle), keep_cache=False)
        elif node.entry_kind is Kind.FILE:
            handle = Handle(node)
            if node.archive is not None:
                self._scans.opened(node.archive, node.index)
        else:
            raise pyfuse3.FUSEError(errno.EINVAL)
        return pyfuse3.FileInfo(fh=self._handles.add(handle), keep_cache=True)

    @guarded
    async def read(self, fh: pyfuse3.FileHandleT, off: int, size: int) -> bytes:
        handle = self._handles.get(fh)
        if handle.data is not None:
            return handle.data[off : off + size]
        if handle.obj is not None:
            return await self._read_object(handle, fh, off, size)
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
            self._pages.offer(handle.node.ino, entry.xet_hash, entry.size, off, off + length)
        return data

    async def _read_object(
        self, handle: Handle, fh: pyfuse3.FileHandleT, off: int, size: int, again: bool = True
    ) -> bytes:
        """Bytes of a plain HTTP object an ARK resolved to, as it was when opened (or, if
        it changed before this open file read any byte, as it is now, at the same size)."""
        obj = handle.obj
        assert obj is not None
        try:
            data = await self.reader.read_object(self.ns.catalog.objects, obj, off, size, fh)
        except StaleObject as exc:
            await self.ns.object_changed(handle.node)  # the next open finds the new one
            fresh = handle.node.obj
            if again and not handle.served and fresh not in (None, obj) and fresh.size == obj.size:
                handle.obj = fresh  # nothing of the old one handed out: read the new one
                return await self._read_object(handle, fh, off, size, again=False)
            log.error("read of %s at %d+%d: %s", obj.ark, off, size, exc)
            raise pyfuse3.FUSEError(errno.EIO) from None
        except ReadError as exc:
            log.error("read of %s at %d+%d: %s", obj.ark, off, size, exc)
            raise pyfuse3.FUSEError(errno.EIO) from None
        handle.served = handle.served or bool(data)
        return data

    @guarded
    async def release(self, fh: pyfuse3.FileHandleT) -> None:
        self._handles.close(fh)
        self.reader.end_stream(fh)  # each open file is a stream of its own for prefetching

    # --- directories -----------------------------------------------------------------------

    @guarded
    async def opendir(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> pyfuse3.FileHandleT:
        node = self.ns.inodes.get(inode)
        if not node.is_dir:
            raise pyfuse3.FUSEError(errno.ENOTDIR)
        listing = await self.ns.listing(node)
        rows = None
        if listing.view is not None:  # a directory of an archive: no Node per entry
            rows = self.attrs.rows(listing.view, listing.positions, listing.names)
        return self._handles.add(Handle(node, listing=listing, rows=rows))

    @guarded
    async def readdir(
        self, fh: pyfuse3.FileHandleT, start_id: int, token: pyfuse3.ReaddirToken
    ) -> None:
        handle = self._handles.get(fh)
        listing = handle.listing
        if listing is None:
            raise pyfuse3.FUSEError(errno.EBADF)
        # Offsets: 1 after `.`, 2 after `..`, then 3 + i after the listing's entry i (its
        # position in the listing taken at opendir), so a resumed readdir continues exactly
        # where the kernel's buffer filled up.
        if start_id == 0 and not pyfuse3.readdir_reply(
            token, DOT, self.attrs.dot(handle.node.ino), 1
        ):
            return
        if start_id <= 1:
            dotdot = self.attrs.dot(self.ns.parent_ino(handle.node))
            if not pyfuse3.readdir_reply(token, DOTDOT, dotdot, 2):
                return
        names, view, first = listing.names, listing.view, max(start_id - DOTS, 0)
        if view is not None and handle.rows is not None:  # a directory of an archive
            positions = listing.positions
            timeout = self.attrs.entry_timeout(view, positions)
            stop = handle.rows.reply(token, first, 1 + DOTS, timeout)
            # readdirplus: the kernel counts a lookup of each entry it got
            self.ns.inodes.remember_entries(view, positions[first:stop])
            return
        make, remember, at_hand = listing.make, self.ns.inodes.remember, self.attrs.at_hand
        for i in range(first, len(names)):
            child = make(i)
            attrs = at_hand(child, True) or await self.attrs.of(child, provisional=True)
            if not pyfuse3.readdir_reply(token, names[i], attrs, i + 1 + DOTS):
                return
            remember(child)  # readdirplus: the kernel counts a lookup per entry but . and ..

    @guarded
    async def releasedir(self, fh: pyfuse3.FileHandleT) -> None:
        self._handles.close(fh)

    # --- extended attributes ---------------------------------------------------------------

    async def _xattrs(self, node: Node) -> dict[str, str]:
        if node.kind is NodeKind.ROOT:
            return {STATS: json.dumps(self.stats_json(), sort_keys=True)}
        if node.obj is not None:
            return object_xattrs(node.obj.ark, node.obj.url, node.obj.info)
        if node.kind is NodeKind.ARCHIVE:
            archive = await self.ns.loaded(node)
            versions = await self.ns.latest.versions(node.key)
            found = url_xattr(self.ns.catalog.resolved_url(node.key))  # through a registry
            return (
                root_xattrs(archive.manifest)
                | ark_xattrs(str(node.ark), archive.erc)
                | versions_xattr(versions)
                | found
            )
        if node.kind is NodeKind.VERSION and node.archive is not None:
            return root_xattrs(node.archive.manifest) | ark_xattrs(str(node.ark), node.archive.erc)
        if node.kind is not NodeKind.ENTRY or node.archive is None:
            return {}
        archive = node.archive
        entry = archive.entry(node.index)
        if entry.kind is Kind.SYMLINK:
            return {}
        ark, root = node.ark, node.root_ark
        assert root is not None
        out = source_xattrs(entry.xattrs) | ark_xattrs(
            str(ark), entry_erc(archive.erc, root, entry)
        )
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
        out["inodes"] = len(self.ns.inodes)
        out["pid"] = os.getpid()
        return out

    async def getxattr(
        self, inode: pyfuse3.InodeT, name: pyfuse3.XAttrNameT, ctx: pyfuse3.RequestContext
    ) -> bytes:
        # The fast path (`ls -l` asks every file for security.* and system.*) awaits nothing.
        if not self.xattrs:
            raise pyfuse3.FUSEError(NO_XATTRS)
        if not name.startswith(b"user."):
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        return await self._user_xattr(inode, name)

    @guarded
    async def _user_xattr(self, inode: pyfuse3.InodeT, name: pyfuse3.XAttrNameT) -> bytes:
        value = (await self._xattrs(self.ns.inodes.get(inode))).get(os.fsdecode(name))
        if value is None:
            raise pyfuse3.FUSEError(pyfuse3.ENOATTR)
        return value.encode("utf-8", "surrogateescape")

    @guarded
    async def listxattr(
        self, inode: pyfuse3.InodeT, ctx: pyfuse3.RequestContext
    ) -> list[pyfuse3.XAttrNameT]:
        if not self.xattrs:
            raise pyfuse3.FUSEError(NO_XATTRS)
        names = await self._xattrs(self.ns.inodes.get(inode))
        return [pyfuse3.XAttrNameT(os.fsencode(n)) for n in listed(names, self.hide_xattrs)]
