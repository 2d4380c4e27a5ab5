"""Background jobs of the data path: where they run, on which threads, who waits for them.

Threads: bookkeeping is on the trio thread; blocking work goes to worker threads a whole
group at a time, under separate CapacityLimiters (Limiters) for a read's fetches, CPU work
(decoding, building maps) and disk reads, for background work (prefetch decoding and disk
reads), and for cache writes, so prefetching and cache writing never hold a slot a read
waits for. CPU work on at most INLINE_BYTES stays on the trio thread (run_cpu).

Hosting: background jobs run in a nursery that a Host owns. Whoever hosts the reader
starts it before the first read with `await nursery.start(reader.run)` (the reader scans
the disk cache first) and ends it with `await reader.aclose()`, which lets the cache
writes under way finish (cache_writer.py); cancelling that nursery instead drops them.
Reads that need a job raise ReadError while the host is not running.
"""

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

import trio

from arkfs.mount.data.errors import ReadError

log = logging.getLogger(__name__)

DISK_THREADS, WRITE_THREADS, BACKGROUND_THREADS = 4, 4, 2
# The most file bytes that CPU work (decoding and checking chunks, checking a map) covers
# on the trio thread: under 0.1 ms of BLAKE3 and LZ4, less than a round trip to a worker
# thread costs on this 2-core VM (0.19 ms, README "Thread hops"). A cold get of 1,000
# small files ran 7% faster with it.
INLINE_BYTES = 128 * 1024

T = TypeVar("T")


async def run_cpu(
    fn: Callable[..., T], *args: object, covers: int, limiter: trio.CapacityLimiter
) -> T:
    """fn(*args), CPU work on covers bytes of a file: in place when they are at most
    INLINE_BYTES, else in a worker thread under limiter."""
    if covers <= INLINE_BYTES:
        return fn(*args)
    return await trio.to_thread.run_sync(fn, *args, limiter=limiter)


class Limiters:
    """The CapacityLimiters of the data path (see the module docstring)."""

    __slots__ = ("background", "cpu", "disk", "fetch", "writes")

    def __init__(self, max_parallel_fetches: int) -> None:
        self.fetch = trio.CapacityLimiter(max_parallel_fetches)  # backend fetches of reads
        self.cpu = trio.CapacityLimiter(os.cpu_count() or 2)  # decoding, building maps
        self.disk = trio.CapacityLimiter(DISK_THREADS)  # disk cache reads
        self.background = trio.CapacityLimiter(BACKGROUND_THREADS)  # prefetch decoding, reads
        self.writes = trio.CapacityLimiter(WRITE_THREADS)  # disk cache writes


class Pending(Generic[T]):
    """A background job several reads may wait for: a file map, or a group of chunks."""

    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value: T | None = None
        self.error: ReadError | None = None

    async def wait(self) -> T:
        await self.done.wait()
        if self.error is not None:
            # The job's own error, kind and fields (StaleObject, Unverified.reason), with no
            # traceback of the job's: every waiter raises it from where it waited.
            raise self.error.with_traceback(None)
        assert self.value is not None
        return self.value

    async def settle(self, what: str, job: Callable[[], Awaitable[T]]) -> None:
        """Run job: its value or its ReadError. Only cancellation propagates: nothing a
        job raises may end the host's nursery."""
        try:
            self.value = await job()
        except ReadError as exc:
            self.error = exc
        except Exception as exc:  # a bug must fail the reads that wait, not the mount
            log.exception("unexpected error %s", what)
            self.error = ReadError(f"{what}: internal error {exc!r}")
        finally:
            if self.value is None and self.error is None:  # cancelled
                self.error = ReadError(f"{what}: the content reader is closing")
            self.done.set()


class Host:
    """The nursery background jobs run in, from run() until stop()."""

    def __init__(self) -> None:
        self._nursery: trio.Nursery | None = None
        self._stopped = trio.Event()
        self._closed = False

    @property
    def running(self) -> bool:
        """Can jobs start now?"""
        return self._nursery is not None and not self._closed

    def nursery(self, *, closing: bool = False) -> trio.Nursery:
        """The nursery to start a job in; ReadError if not running, or with closing only
        once stopped (for the cache write of a read that ends while aclose() drains)."""
        if self._nursery is None or (self._closed and not closing):
            state = "closed" if self._closed else "not running (start it with reader.run)"
            raise ReadError(f"the content reader is {state}")
        return self._nursery

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the jobs until stop(): `await nursery.start(host.run)`."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._stopped.set()

    def close(self) -> bool:
        """Start no job from now on; whether the nursery is still there to stop."""
        self._closed = True
        return self._nursery is not None

    async def stop(self) -> None:
        """Cancel the jobs under way and wait until run() has returned."""
        if self._nursery is not None:
            self._nursery.cancel_scope.cancel()
            await self._stopped.wait()
