"""The data path of the mount: verified bytes of a file, from memory, the disk cache or a backend.

One read:
1. The file's map (file_map.py): from a bounded LRU in memory, else from the disk cache
   (checked again as it loads), else built and checked against the file hash, then
   written to the disk cache. Building it takes one reconstruction of the whole file
   (metadata only: no chunk data) and each xorb footer once (memory, the disk cache, then
   the backend). It must be the whole file: the file hash is the Merkle root of every
   chunk hash, so no smaller set of terms can be checked against it, and unchecked terms
   could name any xorb. It happens once per file, not per mount: the map stays on disk.
2. The chunks that cover the range, found by bisection. If all of them are in the memory
   LRU of decoded chunks, the answer is sliced and joined on the trio thread: no thread hop.
3. Missing chunks are claimed in groups: runs of consecutive chunks of one xorb, at most
   GROUP_BYTES each. A chunk another read or the prefetcher already claimed is waited for,
   not fetched twice. Each group is one background task: chunks in the disk cache are read
   and checked in one worker-thread call; the others are fetched, one backend call per run
   with the exact packed byte range from the map, then decompressed and checked against
   their chunk hashes in one worker-thread call, and written to the disk cache afterwards.
   Fetch URLs come from reconstructions and are kept in memory only (they expire); with
   none for a xorb (a map from disk) or an expired one, the reader asks for a
   reconstruction of just the run's bytes. Failures are not remembered: the next read
   tries again, so reads work again once a backend is back.

Threads: bookkeeping is on the trio thread; blocking work goes to worker threads a whole
group at a time, under separate CapacityLimiters for a read's fetches, CPU work (decoding,
building maps) and disk reads, for background work (prefetch decoding and disk reads), and
for cache writes, so prefetching and cache writing never hold a slot a read waits for.

Prefetch: reads of a stream (an open file, if the caller names one, else the file) that
start where the previous one ended, or up to SEQ_SLACK after, are sequential; those
starting up to SEQ_SLACK before change nothing (re-reads, requests the kernel sent out of
order); any other read ends the run.
Each sequential read doubles a window from PREFETCH_MIN up to PREFETCH_MAX, and when less
than half a window lies claimed ahead of the reader, the rest of the window is claimed as
background groups. At most PREFETCH_GROUPS of those run at once; prefetch never queues,
it claims only what it can start now, so a group a read joins is always under way.

Hosting: background tasks run in a nursery the reader owns. The host starts it before the
first read with `await nursery.start(reader.run)` (it scans the disk cache first) and ends
it with `await reader.aclose()`, which lets the cache writes under way finish; cancelling
the host's nursery drops them. Reads that need the backend raise ReadError while it is not
running.

Bounds: decoded chunks in memory (memory_bytes), file maps (MAP_CHUNKS chunks), footers
in memory (FOOTERS_IN_MEMORY), fetch URLs (URLS), streams (STREAMS), background prefetch
(PREFETCH_GROUPS groups of GROUP_BYTES), cache writes waiting (WRITE_BACKLOG bytes; beyond
it chunks are served but not cached; footers and maps, which are small, are always
written). The in-flight table holds only chunks of running groups: those of the reads in
progress plus the prefetch groups.
"""

import logging
import os
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext
from dataclasses import dataclass
from typing import Generic, TypeVar

import trio

from arkfs.backend.base import Backend, BackendError, Unauthorized
from arkfs.mount.chunk_cache import ChunkCache
from arkfs.mount.file_map import FileMap, build_map, decode_run
from arkfs.mount.stats import MountStats
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction
from arkfs.xet.xorb import XorbFooter, footer_size

log = logging.getLogger(__name__)

MIB = 1024 * 1024
MEMORY_BYTES = 64 * MIB  # decoded chunks kept in memory
MAP_CHUNKS = 1 << 20  # chunks of all file maps in memory (~56 MB, ~64 GiB of files)
MAP_OVERHEAD = 64  # what a map costs beyond its chunks, in chunks
MAP_BYTES = 56  # bytes a map takes per chunk, in memory and on disk
FOOTERS_IN_MEMORY = 32  # for building maps of many small files in one xorb
URLS = 1 << 16  # fetch URLs remembered, per (backend, xorb)
STREAMS = 256  # streams (open files, or files) whose read pattern is tracked
GROUP_BYTES = 8 * MIB  # most decoded bytes one background group loads
PREFETCH_MIN, PREFETCH_MAX = 1 * MIB, 32 * MIB
PREFETCH_GROUPS = 4
SEQ_SLACK = 1 * MIB  # how far from the expected offset a read still counts as sequential
WRITE_BACKLOG = 64 * MIB  # decoded bytes waiting to be written to the disk cache
BACKEND_TIMEOUT = 120.0  # seconds: a backstop for a backend call that never returns
CLOSE_GRACE = 10.0  # seconds aclose() waits for cache writes under way
DISK_THREADS, WRITE_THREADS, BACKGROUND_THREADS = 4, 4, 2

T = TypeVar("T")


class ReadError(Exception):
    """Bytes of a file could not be read and verified; the message says why, in one line."""


class _Expired(ReadError):
    """The backend refused a URL or token (Unauthorized): a new reconstruction may help."""


class _Pending(Generic[T]):
    """A background job several reads may wait for: a file map, or a group of chunks."""

    __slots__ = ("done", "error", "value")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.value: T | None = None
        self.error: ReadError | None = None

    async def wait(self) -> T:
        await self.done.wait()
        if self.error is not None:
            raise ReadError(str(self.error))
        assert self.value is not None
        return self.value

    async def settle(self, what: str, job: Callable[[], Awaitable[T]]) -> None:
        """Run job: its value or its ReadError. Only cancellation propagates: nothing a
        job raises may end the reader's nursery."""
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


@dataclass(slots=True)
class _Stream:
    """The read pattern of one file: where a sequential read goes next, what is claimed."""

    next: int
    ahead: int
    window: int = 0


def _runs(fmap: FileMap, indices: Sequence[int]) -> list[list[int]]:
    """Split map indices into runs of consecutive chunks of one xorb."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and fmap.follows(runs[-1][-1], i):
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


class ContentReader:
    """Reads verified byte ranges of XET files for a mount (see the module docstring)."""

    def __init__(
        self,
        cache: ChunkCache,
        stats: MountStats,
        *,
        max_parallel_fetches: int = 16,
        memory_bytes: int = MEMORY_BYTES,
    ) -> None:
        self._cache = cache
        self.stats = stats
        stats.gauges = self._gauges
        self._memory_limit = memory_bytes
        self._fetch_limiter = trio.CapacityLimiter(max_parallel_fetches)
        self._cpu = trio.CapacityLimiter(os.cpu_count() or 2)
        self._disk = trio.CapacityLimiter(DISK_THREADS)
        self._background = trio.CapacityLimiter(BACKGROUND_THREADS)
        self._writes = trio.CapacityLimiter(WRITE_THREADS)
        self._memory: OrderedDict[bytes, bytes] = OrderedDict()
        self._memory_bytes = 0
        self._maps: OrderedDict[tuple[bytes, int], FileMap] = OrderedDict()
        self._map_chunks = 0
        self._map_loads: dict[tuple[bytes, int], _Pending[FileMap]] = {}
        self._footers: OrderedDict[bytes, XorbFooter] = OrderedDict()
        self._urls: OrderedDict[tuple[str, bytes], str] = OrderedDict()
        self._inflight: dict[bytes, _Pending[dict[bytes, bytes]]] = {}
        self._streams: OrderedDict[Hashable, _Stream] = OrderedDict()
        self._prefetching = 0
        self._write_backlog = 0
        self._write_failed = False
        self._writes_done = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._stopped = trio.Event()
        self._closed = False

    # --- hosting ---------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the background work until aclose(): `await nursery.start(reader.run)`."""
        await trio.to_thread.run_sync(self._cache.scan, limiter=self._disk)
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                task_status.started()
                await trio.sleep_forever()
        finally:
            self._nursery = None
            self._stopped.set()

    async def aclose(self) -> None:
        """Let cache writes under way finish (CLOSE_GRACE at most), then stop the
        background work; reads still waiting fail with ReadError, later ones too."""
        self._closed = True
        if self._nursery is None:
            return
        with trio.move_on_after(CLOSE_GRACE):
            while self._write_backlog:
                self._writes_done = trio.Event()
                await self._writes_done.wait()
        self._nursery.cancel_scope.cancel()
        await self._stopped.wait()

    def _running(self) -> trio.Nursery:
        if self._nursery is None or self._closed:
            state = "closed" if self._closed else "not running (start it with reader.run)"
            raise ReadError(f"the content reader is {state}")
        return self._nursery

    # --- reads -----------------------------------------------------------------------------

    async def read(
        self,
        backend: Backend,
        file_hash: bytes,
        size: int,
        offset: int,
        length: int,
        stream: Hashable | None = None,
    ) -> bytes:
        """Exactly min(length, size - offset) bytes (b"" at or after EOF), every one verified.

        stream names the sequence of reads this one belongs to, for prefetching, e.g. an
        open file handle, so readers at different places in one file do not look random;
        by default every read of the file is one stream. Let go of it with end_stream().
        """
        self.stats.reads += 1
        end = min(offset + length, size)
        if offset >= end:
            return b""
        try:
            data = await self._read(
                backend, file_hash, size, offset, end, file_hash if stream is None else stream
            )
        except ReadError:
            self.stats.errors += 1
            raise
        self.stats.bytes_read += len(data)
        return data

    def around(
        self, file_hash: bytes, size: int, offset: int, end: int
    ) -> tuple[int, bytes] | None:
        """The whole chunks holding bytes [offset, end) and where they start, if all are in
        memory (as right after a read of them): what the kernel may cache beyond the read."""
        fmap = self._maps.get((file_hash, size))
        if fmap is None:
            return None
        first, last = fmap.span(offset, end)
        chunks = [self._memory.get(fmap.chunk_hash(i), b"") for i in range(first, last)]
        if not all(chunks):
            return None
        return fmap.start(first), b"".join(chunks)

    def end_stream(self, stream: Hashable) -> None:
        """Stop tracking a stream named in read() (its file was closed)."""
        self._streams.pop(stream, None)

    async def _read(
        self,
        backend: Backend,
        file_hash: bytes,
        size: int,
        offset: int,
        end: int,
        stream: Hashable,
    ) -> bytes:
        key = (file_hash, size)
        fmap = self._maps.get(key)
        if fmap is None:
            fmap = await self._load_map(backend, file_hash, size)
        else:
            self._maps.move_to_end(key)
        first, last = fmap.span(offset, end)
        memory = self._memory
        chunks: list[bytes] = []  # b"" for a chunk not in memory: no chunk is empty
        missing: list[int] = []
        for i in range(first, last):
            h = fmap.chunk_hash(i)
            c = memory.get(h, b"")
            if not c:
                missing.append(i)
            else:
                memory.move_to_end(h)
            chunks.append(c)
        hits = len(chunks) - len(missing)
        self.stats.memory_hits += hits
        self.stats.cache_hits += hits
        if missing:
            pendings, _ = self._claim(backend, fmap, missing, prefetch=False)
            self._track(backend, fmap, stream, offset, end)
            got: dict[bytes, bytes] = {}
            for p in pendings:
                got.update(await p.wait())
            for i in missing:
                chunks[i - first] = got[fmap.chunk_hash(i)]
        else:
            self._track(backend, fmap, stream, offset, end)
        return _assemble(fmap, first, chunks, offset, end)

    def cached_fraction(self, file_hash: bytes, size: int) -> float:
        """Fraction of the file's bytes whose chunks are in the disk cache.

        0.0 until the file's map is loaded (by a read): without it the chunks are unknown,
        and finding them would take a backend call. An empty file is wholly cached. Costs
        a lookup per chunk, about 6 ms per GiB of file.
        """
        if size == 0:
            return 1.0
        fmap = self._maps.get((file_hash, size))
        if fmap is None:
            return 0.0
        has = self._cache.has
        cached = prev = 0
        for i, e in enumerate(fmap.ends):
            if has(fmap.chunk_hash(i)):
                cached += e - prev
            prev = e
        return cached / size

    def _gauges(self) -> dict[str, int]:
        return {
            "cache_bytes": self._cache.used_bytes,
            "cache_limit": self._cache.max_bytes,
            "cache_chunks": len(self._cache),
            "cache_bad_files": self._cache.bad_files,
            "memory_bytes": self._memory_bytes,
            "memory_limit": self._memory_limit,
            "maps": len(self._maps),
            "inflight_chunks": len(self._inflight),
            "prefetch_groups": self._prefetching,
            "write_backlog_bytes": self._write_backlog,
        }

    # --- claiming chunks -------------------------------------------------------------------

    def _claim(
        self, backend: Backend, fmap: FileMap, indices: Sequence[int], prefetch: bool
    ) -> tuple[list[_Pending[dict[bytes, bytes]]], int]:
        """Pending loads of the chunks at indices: joined if in flight, else started as groups.

        Prefetch starts groups only while fewer than PREFETCH_GROUPS run; it stops before
        the first chunk it could not claim. Returns the loads and how many indices were done.
        """
        nursery = self._running()  # before any claim: a claim must never be left unstarted
        pendings: dict[int, _Pending[dict[bytes, bytes]]] = {}
        groups: list[tuple[_Pending[dict[bytes, bytes]], list[int]]] = []
        group_bytes = 0
        done = len(indices)
        for k, i in enumerate(indices):
            h = fmap.chunk_hash(i)
            p = self._inflight.get(h)
            if p is None:
                size = fmap.ends[i] - fmap.start(i)
                if not groups or not (
                    fmap.follows(groups[-1][1][-1], i) and group_bytes + size <= GROUP_BYTES
                ):
                    if prefetch and self._prefetching >= PREFETCH_GROUPS:
                        done = k
                        break
                    self._prefetching += prefetch
                    groups.append((_Pending(), []))
                    group_bytes = 0
                p, run = groups[-1]
                run.append(i)
                group_bytes += size
                self._inflight[h] = p
            pendings[id(p)] = p
        for p, run in groups:
            nursery.start_soon(self._group, backend, fmap, run, p, prefetch)
        return list(pendings.values()), done

    def _track(
        self, backend: Backend, fmap: FileMap, stream: Hashable, offset: int, end: int
    ) -> None:
        """Follow a stream's read pattern; claim the prefetch window when it is sequential."""
        s = self._streams.get(stream)
        if s is None:
            self._streams[stream] = _Stream(end, end)
            if len(self._streams) > STREAMS:
                self._streams.popitem(last=False)
            return
        self._streams.move_to_end(stream)
        if not -SEQ_SLACK <= offset - s.next <= SEQ_SLACK:
            s.next = s.ahead = end
            s.window = 0
            return
        if offset < s.next:  # a re-read, or a request the kernel sent out of order
            return
        s.next = end
        s.ahead = max(s.ahead, s.next)
        s.window = min(max(2 * s.window, PREFETCH_MIN), PREFETCH_MAX)
        if s.ahead - s.next < s.window // 2 and s.ahead < fmap.size:
            s.ahead = self._prefetch(backend, fmap, s.ahead, min(s.next + s.window, fmap.size))

    def _prefetch(self, backend: Backend, fmap: FileMap, start: int, stop: int) -> int:
        """Claim bytes [start, stop) in the background; return where the claim ended."""
        if self._nursery is None or self._closed:
            return start
        first, last = fmap.span(start, stop)
        todo = [
            i
            for i in range(first, last)
            if (h := fmap.chunk_hash(i)) not in self._memory and h not in self._inflight
        ]
        _, done = self._claim(backend, fmap, todo, prefetch=True)
        return fmap.start(todo[done]) if done < len(todo) else fmap.ends[last - 1]

    # --- loading groups of chunks ----------------------------------------------------------

    async def _group(
        self,
        backend: Backend,
        fmap: FileMap,
        run: list[int],
        pending: _Pending[dict[bytes, bytes]],
        prefetch: bool,
    ) -> None:
        """Load the chunks of run (disk cache, else backend) for everyone waiting on pending."""
        hashes = [fmap.chunk_hash(i) for i in run]
        fetched: dict[bytes, bytes] = {}

        async def load() -> dict[bytes, bytes]:
            found = await self._from_disk(hashes, prefetch)
            todo = [i for i, h in zip(run, hashes, strict=True) if h not in found]
            for sub in _runs(fmap, todo):
                decoded = await self._fetch_run(backend, fmap, sub, prefetch)
                fetched.update(zip((fmap.chunk_hash(i) for i in sub), decoded, strict=True))
            chunks = found | fetched
            self._remember(chunks)
            if prefetch:
                self.stats.prefetched_bytes += sum(len(c) for c in chunks.values())
            return chunks

        what = f"reading file {hash_to_string(fmap.file_hash)}"
        try:
            await pending.settle(what, load)
        finally:
            for h in hashes:
                if self._inflight.get(h) is pending:
                    del self._inflight[h]
            self._prefetching -= prefetch
        if fetched:
            await self._store(fetched)

    async def _from_disk(self, hashes: list[bytes], prefetch: bool) -> dict[bytes, bytes]:
        """The chunks of hashes in the disk cache, checked (one worker-thread call)."""
        if not any(self._cache.has(h) for h in hashes):
            return {}
        limiter = self._background if prefetch else self._disk
        found = await trio.to_thread.run_sync(self._cache.get_chunks, hashes, limiter=limiter)
        self.stats.disk_hits += len(found)
        self.stats.cache_hits += len(found)
        return found

    async def _fetch_run(
        self, backend: Backend, fmap: FileMap, run: list[int], prefetch: bool
    ) -> list[bytes]:
        """Fetch the packed bytes of run (one xorb, consecutive chunks); decode and check them."""
        xh = fmap.xorbs[fmap.xorb_of[run[0]]]
        lo, hi = fmap.packed_start[run[0]], fmap.packed_end[run[-1]]
        what = f"file {hash_to_string(fmap.file_hash)}"
        limiter: AbstractAsyncContextManager[object] = (
            nullcontext() if prefetch else self._fetch_limiter
        )
        url = self._urls.get((backend.name, xh))
        refreshed = url is None
        if url is None:
            url = await self._fresh_url(backend, fmap, run)
        while True:
            fr = FetchRange(url, fmap.index[run[0]], fmap.index[run[-1]] + 1, lo, hi - 1)
            try:
                async with limiter:
                    data = await self._call(what, backend.fetch, xh, fr)
                break
            except _Expired:  # the URL expired: ask for a new one, once
                if refreshed:
                    raise
                url = await self._fresh_url(backend, fmap, run)
                refreshed = True
        if len(data) != hi - lo:
            raise ReadError(f"{what}: {backend.name} sent {len(data)} bytes, not {hi - lo}")
        self.stats.fetches += 1
        self.stats.bytes_fetched += len(data)
        self.stats.cache_misses += len(run)
        try:
            return await trio.to_thread.run_sync(
                decode_run, data, fmap, run, limiter=self._background if prefetch else self._cpu
            )
        except XetError as exc:
            raise ReadError(
                f"{what}: xorb {hash_to_string(xh)} from {backend.name} fails verification: {exc}"
            ) from None

    async def _fresh_url(self, backend: Backend, fmap: FileMap, run: list[int]) -> str:
        """A fetch URL for the xorb of run, from a reconstruction of the bytes run holds."""
        name = hash_to_string(fmap.file_hash)
        xh = fmap.xorbs[fmap.xorb_of[run[0]]]
        rec = await self._call(
            f"file {name}",
            backend.reconstruction,
            fmap.file_hash,
            fmap.start(run[0]),
            fmap.ends[run[-1]],
        )
        self.stats.url_refreshes += 1
        self._keep_urls(backend, rec)
        url = self._urls.get((backend.name, xh))
        if url is None:
            raise ReadError(
                f"file {name}: {backend.name} gave no URL for xorb {hash_to_string(xh)}"
            )
        return url

    async def _call(self, what: str, fn: Callable[..., Awaitable[T]], *args: object) -> T:
        """A backend call with a time limit; its errors become ReadError (_Expired if the
        backend refused a URL or token)."""
        try:
            with trio.fail_after(BACKEND_TIMEOUT):
                return await fn(*args)
        except Unauthorized as exc:
            raise _Expired(f"{what}: {exc}") from None
        except BackendError as exc:
            raise ReadError(f"{what}: {exc}") from None
        except trio.TooSlowError:
            raise ReadError(
                f"{what}: no answer from the backend in {BACKEND_TIMEOUT:.0f} s"
            ) from None

    async def _store(self, chunks: dict[bytes, bytes]) -> None:
        """Write fetched chunks to the disk cache, unless the write backlog is full."""
        size = sum(len(c) for c in chunks.values())
        if self._write_backlog + size <= WRITE_BACKLOG:
            self._write_backlog += size
            await self._write(size, self._cache.put_chunks, list(chunks.items()))

    def _write_soon(self, size: int, fn: Callable[..., None], *args: object) -> None:
        """Start a disk cache write in the background, in the backlog from now on."""
        nursery = self._running()
        self._write_backlog += size
        nursery.start_soon(self._write, size, fn, *args)

    async def _write(self, size: int, fn: Callable[..., None], *args: object) -> None:
        """Run a disk cache write (already counted in the backlog that aclose() waits for)
        in a worker thread; an OSError is logged once per reader: the cache is optional."""
        try:
            await trio.to_thread.run_sync(fn, *args, limiter=self._writes)
        except OSError as exc:
            if not self._write_failed:
                log.warning("cannot write the cache in %s: %s", self._cache.root, exc)
                self._write_failed = True
        finally:
            self._write_backlog -= size
            if not self._write_backlog:
                self._writes_done.set()

    def _remember(self, chunks: dict[bytes, bytes]) -> None:
        """Keep decoded chunks in the memory LRU."""
        memory = self._memory
        for h, c in chunks.items():
            if h in memory:
                memory.move_to_end(h)
            else:
                memory[h] = c
                self._memory_bytes += len(c)
        while self._memory_bytes > self._memory_limit and memory:
            self._memory_bytes -= len(memory.popitem(last=False)[1])

    def _keep_urls(self, backend: Backend, rec: Reconstruction) -> None:
        for xh, frs in rec.fetch.items():
            if frs:
                self._urls[(backend.name, xh)] = frs[0].url
                self._urls.move_to_end((backend.name, xh))
        while len(self._urls) > URLS:
            self._urls.popitem(last=False)

    # --- file maps -------------------------------------------------------------------------

    async def _load_map(self, backend: Backend, file_hash: bytes, size: int) -> FileMap:
        """The file's map, built once however many reads ask for it at the same time."""
        key = (file_hash, size)
        p = self._map_loads.get(key)
        if p is None:
            nursery = self._running()
            p = self._map_loads[key] = _Pending()
            nursery.start_soon(self._map_task, backend, key, p)
        return await p.wait()

    async def _map_task(
        self, backend: Backend, key: tuple[bytes, int], pending: _Pending[FileMap]
    ) -> None:
        try:
            await pending.settle(
                f"mapping file {hash_to_string(key[0])}", lambda: self._get_map(backend, *key)
            )
        finally:
            del self._map_loads[key]

    async def _get_map(self, backend: Backend, file_hash: bytes, size: int) -> FileMap:
        """The map from the disk cache, else built from the backend and written there;
        kept in memory either way."""
        fmap = await trio.to_thread.run_sync(self._cache.get_map, file_hash, limiter=self._disk)
        if fmap is None:
            fmap = await self._build_map(backend, file_hash, size)
            self.stats.maps_loaded += 1
            self._write_soon(len(fmap) * MAP_BYTES, self._cache.put_map, fmap)
        elif fmap.size != size:
            raise ReadError(
                f"file {hash_to_string(file_hash)} has {fmap.size} bytes, not {size} "
                "as the manifest says"
            )
        else:
            self.stats.maps_from_disk += 1
        self._maps[(file_hash, size)] = fmap
        self._map_chunks += len(fmap) + MAP_OVERHEAD
        while self._map_chunks > MAP_CHUNKS and len(self._maps) > 1:
            self._map_chunks -= len(self._maps.popitem(last=False)[1]) + MAP_OVERHEAD
        return fmap

    async def _build_map(self, backend: Backend, file_hash: bytes, size: int) -> FileMap:
        """File Reconstruction of the whole file, footers, then the checks of build_map."""
        what = f"file {hash_to_string(file_hash)}"
        rec = await self._call(what, backend.reconstruction, file_hash, 0, size)
        if rec.offset_into_first_range:
            raise ReadError(f"{what}: {backend.name} skips bytes at the start of the file")
        self._keep_urls(backend, rec)
        xorbs = list(dict.fromkeys(t.xorb_hash for t in rec.terms))
        footers = {xh: self._footers[xh] for xh in xorbs if xh in self._footers}
        need = [xh for xh in xorbs if xh not in footers]
        if need:
            footers |= await trio.to_thread.run_sync(self._disk_footers, need, limiter=self._disk)
            fetched = await self._fetch_footers(
                backend, what, rec, [xh for xh in need if xh not in footers]
            )
            footers |= fetched
            if fetched:
                self._write_soon(
                    sum(footer_size(f.num_chunks) for f in fetched.values()),
                    self._put_footers,
                    list(fetched.values()),
                )
        for xh in xorbs:
            self._footers[xh] = footers[xh]
            self._footers.move_to_end(xh)
        while len(self._footers) > FOOTERS_IN_MEMORY:
            self._footers.popitem(last=False)
        try:
            return await trio.to_thread.run_sync(
                build_map, file_hash, size, rec.terms, footers, limiter=self._cpu
            )
        except XetError as exc:
            raise ReadError(f"{what} from {backend.name} fails verification: {exc}") from None

    def _disk_footers(self, xorbs: list[bytes]) -> dict[bytes, XorbFooter]:
        """Footers found in the disk cache, checked (blocking)."""
        found = {}
        for xh in xorbs:
            footer = self._cache.get_footer(xh)
            if footer is not None:
                found[xh] = footer
        return found

    async def _fetch_footers(
        self, backend: Backend, what: str, rec: Reconstruction, xorbs: list[bytes]
    ) -> dict[bytes, XorbFooter]:
        """Footers of xorbs from the backend, in parallel; the first failure is raised."""
        got: dict[bytes, XorbFooter] = {}
        errors: list[ReadError] = []

        async def one(xh: bytes) -> None:
            try:
                async with self._fetch_limiter:
                    footer = await self._call(what, backend.footer, xh, rec.fetch[xh][0])
            except ReadError as exc:
                errors.append(exc)
                return
            if footer.xorb_hash != xh:
                errors.append(ReadError(f"{what}: {backend.name} sent the footer of another xorb"))
                return
            self.stats.footer_fetches += 1
            got[xh] = footer

        async with trio.open_nursery() as nursery:
            for xh in xorbs:
                nursery.start_soon(one, xh)
        if errors:
            raise errors[0]
        return got

    def _put_footers(self, footers: list[XorbFooter]) -> None:
        for footer in footers:
            self._cache.put_footer(footer)


def _assemble(fmap: FileMap, first: int, chunks: list[bytes], offset: int, end: int) -> bytes:
    """Bytes [offset, end) of the file from its chunks first, first + 1, ..."""
    start = fmap.start(first)
    if len(chunks) == 1:
        return chunks[0][offset - start : end - start]
    last_start = fmap.start(first + len(chunks) - 1)
    parts: list[bytes | memoryview] = [memoryview(chunks[0])[offset - start :]]
    parts += chunks[1:-1]
    parts.append(memoryview(chunks[-1])[: end - last_start])
    return b"".join(parts)
