"""Writes to the disk cache, in worker threads, behind the reads that fetched what they write.

The backlog is the bytes handed over and not yet written. Fetched chunks, and blocks of
plain HTTP objects, are written only while the backlog stays within WRITE_BACKLOG; beyond
it they are served but not cached. File maps and footers, which are small, are always
written. The cache is optional: an OSError is logged once per writer and the reads go on.
At close, drain() lets the writes under way finish, CLOSE_GRACE at most.

Writes are handed to worker threads in batches: a write waits up to BATCH_WAIT for others
to join it, unless BATCH_BYTES are queued. Waking a worker thread for each small file's
map and pack cost more than writing them: a cold `arkfs get` of 1,000 small files spent
a sixth of its time filling the cache, one thread call per write.
"""

import logging
from collections import deque
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
BATCH_BYTES = 8 * MIB  # bytes of queued writes one worker-thread call takes at most
BATCH_WAIT = 0.02  # seconds a write waits for others, while fewer than BATCH_BYTES queue

_Write = tuple[int, Callable[..., None], tuple[object, ...]]  # size, fn, args


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
        self._queue: deque[_Write] = deque()
        self._queued = 0  # bytes in the queue
        self._batching = False  # a task hands the queue over in batches

    @property
    def backlog(self) -> int:
        """Bytes handed over and not written yet."""
        return self._backlog

    def write_chunks(self, chunks: Mapping[bytes, ChunkData]) -> None:
        """Start writing verified chunks as one pack, unless that would pass the backlog
        bound; while the host closes too (drain() waits for them), not once it stopped
        (ReadError)."""
        size = sum(len(c) for c in chunks.values())
        if self._backlog + size <= self.max_backlog:
            self._start(size, self._cache.put_chunks, list(chunks.items()), closing=True)

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

    def _start(
        self, size: int, fn: Callable[..., None], *args: object, closing: bool = False
    ) -> None:
        """Queue a write, in the backlog from now on (closing: as Host.nursery)."""
        nursery = self._host.nursery(closing=closing)
        self._backlog += size
        self._queue.append((size, fn, args))
        self._queued += size
        if not self._batching:
            self._batching = True
            nursery.start_soon(self._batches, nursery)

    async def _batches(self, nursery: trio.Nursery) -> None:
        """Hand the queue over to worker threads in batches (see the module docstring)."""
        try:
            while self._queue:
                if self._queued < BATCH_BYTES:
                    await trio.sleep(BATCH_WAIT)
                batch: list[_Write] = []
                taken = 0
                while self._queue and (not batch or taken + self._queue[0][0] <= BATCH_BYTES):
                    write = self._queue.popleft()
                    batch.append(write)
                    taken += write[0]
                self._queued -= taken
                nursery.start_soon(self._write, batch)
        finally:
            self._batching = False

    async def _write(self, batch: list[_Write]) -> None:
        """Run writes already counted in the backlog, in one worker-thread call."""
        try:
            failure = await trio.to_thread.run_sync(_run, batch, limiter=self._limiter)
        finally:
            self._backlog -= sum(size for size, _, _ in batch)
            if not self._backlog:
                self._idle.set()
        if failure is not None and not self._failed:
            log.warning("cannot write the cache in %s: %s", self._cache.root, failure)
            self._failed = True


def _run(batch: list[_Write]) -> Exception | None:
    """Run each write of batch (blocking); the first error, if any failed. A write that
    fails, however, leaves the others of its batch to run, and the reads to go on."""
    failure = None
    for _, fn, args in batch:
        try:
            fn(*args)
        except Exception as exc:  # OSError (ENOSPC, EIO...), or a bug: the cache is optional
            failure = failure or exc
    return failure
