"""Writes to the disk cache, in worker threads, behind the reads that fetched what they write.

The backlog is the bytes handed over and not yet written. Fetched chunks, and blocks of
plain HTTP objects, are written only while the backlog stays within WRITE_BACKLOG; beyond
it they are served but not cached. File maps and footers, which are small, are always
written. The cache is optional: an OSError is logged once per writer and the reads go on.
At close, drain() lets the writes under way finish, CLOSE_GRACE at most.
"""

import logging
from collections.abc import Callable, Mapping

import trio

from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.file_map import MAP_BYTES, FileMap
from arkfs.mount.data.jobs import Host
from arkfs.xet.compression import ChunkData
from arkfs.xet.xorb import XorbFooter, footer_size

log = logging.getLogger(__name__)

MIB = 1024 * 1024
WRITE_BACKLOG = 64 * MIB  # decoded bytes waiting to be written to the disk cache
CLOSE_GRACE = 10.0  # seconds drain() waits for cache writes under way


class CacheWriter:
    """Writes chunks, maps and footers to a ChunkCache, within a backlog of bytes."""

    def __init__(
        self,
        cache: ChunkCache,
        host: Host,
        limiter: trio.CapacityLimiter,
        max_backlog: int = WRITE_BACKLOG,
    ) -> None:
        self._cache = cache
        self._host = host
        self._limiter = limiter
        self.max_backlog = max_backlog
        self._backlog = 0
        self._failed = False
        self._idle = trio.Event()

    @property
    def backlog(self) -> int:
        """Bytes handed over and not written yet."""
        return self._backlog

    async def write_chunks(self, chunks: Mapping[bytes, ChunkData]) -> None:
        """Write verified chunks as one pack, unless that would pass the backlog bound."""
        size = sum(len(c) for c in chunks.values())
        if self._backlog + size <= self.max_backlog:
            self._backlog += size
            await self._write(size, self._cache.put_chunks, list(chunks.items()))

    def write_block(self, block_id: bytes, data: bytes) -> None:
        """Start writing a block of a plain HTTP object, unless that would pass the
        backlog bound; ReadError if the host is not running."""
        if self._backlog + len(data) <= self.max_backlog:
            self._start(len(data), self._cache.put_block, block_id, data)

    def write_map(self, fmap: FileMap) -> None:
        """Start writing a verified map; ReadError if the host is not running."""
        self._start(len(fmap) * MAP_BYTES, self._cache.put_map, fmap)

    def write_footers(self, footers: list[XorbFooter]) -> None:
        """Start writing verified footers; ReadError if the host is not running."""
        size = sum(footer_size(f.num_chunks) for f in footers)
        self._start(size, self._put_footers, footers)

    async def drain(self, grace: float = CLOSE_GRACE) -> None:
        """Wait until the backlog is empty, grace seconds at most."""
        with trio.move_on_after(grace):
            while self._backlog:
                self._idle = trio.Event()
                await self._idle.wait()

    def _put_footers(self, footers: list[XorbFooter]) -> None:
        for footer in footers:
            self._cache.put_footer(footer)

    def _start(self, size: int, fn: Callable[..., None], *args: object) -> None:
        """Start a write in the background, in the backlog from now on."""
        nursery = self._host.nursery()
        self._backlog += size
        nursery.start_soon(self._write, size, fn, *args)

    async def _write(self, size: int, fn: Callable[..., None], *args: object) -> None:
        """Run a write already counted in the backlog, in a worker thread."""
        try:
            await trio.to_thread.run_sync(fn, *args, limiter=self._limiter)
        except OSError as exc:
            if not self._failed:
                log.warning("cannot write the cache in %s: %s", self._cache.root, exc)
                self._failed = True
        finally:
            self._backlog -= size
            if not self._backlog:
                self._idle.set()
