"""The data path of the mount: verified bytes of a file, from memory, the disk cache or a backend.

One read, and the module that does each part:
1. The file's map: map_loader.py (memory, the disk cache, else built from the backend and
   checked against the file hash; while it is checked, the read's chunks are already
   being fetched, by the map laid out from the footers the server sent).
2. The chunks that cover the range, found by bisection. If all of them are in the memory
   LRU of decoded chunks, the answer is sliced and joined on the trio thread: no thread
   hop.
3. Missing chunks: chunk_loader.py claims them in groups, loads each group once (disk
   cache, else fetched, decoded and verified in worker threads) and cache_writer.py writes
   the fetched ones to the disk cache.
4. The read pattern of its stream: prefetch.py says what to claim ahead, and the chunk
   loader claims it in the background.
A plain HTTP object (an ARK that is no arkfs archive) is read by object_loader.py, in
blocks, through the same memory budget rules, disk cache, writer, prefetch policy and
background host.
Background work runs in a nursery this reader hosts and on separate thread limiters
(jobs.py); backend calls have a backstop time limit (backend_calls.py).

Every bound lives with what it bounds: decoded chunks in memory, group size and prefetch
groups (chunk_loader.py), maps and footers in memory (map_loader.py), fetch URLs
(backend_calls.py), streams (prefetch.py), the cache write backlog (cache_writer.py).
"""

from collections.abc import Awaitable, Callable, Hashable, Sequence

import trio

from arkfs.backend.base import CasReader
from arkfs.mount.data.backend_calls import FetchUrls
from arkfs.mount.data.cache_writer import CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.chunk_loader import GROUP_BYTES, MEMORY_BYTES, ChunkLoader
from arkfs.mount.data.errors import ReadError
from arkfs.mount.data.file_map import FileMap
from arkfs.mount.data.jobs import Host, Limiters
from arkfs.mount.data.map_loader import MapLoader
from arkfs.mount.data.object_loader import ObjectLoader
from arkfs.mount.data.parts import Parts
from arkfs.mount.data.prefetch import Prefetcher
from arkfs.mount.stats import MountStats
from arkfs.resolver.objects import ObjectReader, RemoteObject
from arkfs.util.allocator import limit_arenas
from arkfs.xet.compression import ChunkData

__all__ = ["ContentReader", "ReadError"]

# Most chunk bytes one read may copy and check on the trio thread (two chunks of the
# largest size: a small read); more go to worker threads, so the second core shares them.
AT_HAND_BYTES = 256 * 1024


class ContentReader:
    """Reads verified byte ranges of XET files for a mount (see the module docstring)."""

    def __init__(
        self,
        cache: ChunkCache,
        stats: MountStats,
        *,
        max_parallel_fetches: int = 16,
        memory_bytes: int = MEMORY_BYTES,
        group_bytes: int = GROUP_BYTES,
    ) -> None:
        limit_arenas()
        self._cache = cache
        self.stats = stats
        stats.gauges = self._gauges
        self._host = Host()
        self._limiters = Limiters(max_parallel_fetches)
        self._writer = CacheWriter(cache, self._host, self._limiters.writes)
        urls = FetchUrls()
        parts = Parts(cache, stats, self._host, self._limiters, self._writer)
        self._maps = MapLoader(parts, urls)
        self._chunks = ChunkLoader(parts, urls, memory_bytes, group_bytes, self._maps.footer)
        self._prefetcher = Prefetcher()
        self._objects = ObjectLoader(parts, self._prefetcher)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Host the background work until aclose(): `await nursery.start(reader.run)`.
        It scans the disk cache first."""
        await trio.to_thread.run_sync(self._cache.scan, limiter=self._limiters.disk)
        await self._host.run(task_status=task_status)

    async def aclose(self) -> None:
        """Let cache writes under way finish (CLOSE_GRACE at most), then stop the
        background work; reads still waiting fail with ReadError, later ones too."""
        if self._host.close():
            await self._writer.drain()
            await self._host.stop()

    async def read(
        self,
        backend: CasReader,
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
        return _joined(await self.read_parts(backend, file_hash, size, offset, length, stream))

    async def read_parts(
        self,
        backend: CasReader,
        file_hash: bytes,
        size: int,
        offset: int,
        length: int,
        stream: Hashable | None = None,
    ) -> list[bytes | memoryview]:
        """What read() gives, not joined: views of the verified chunks, in order, so a
        caller that writes them to a file (os.pwritev) never copies them in memory."""
        end = min(offset + length, size)
        return await self._counted(
            offset < end,
            lambda: self._read(
                backend, file_hash, size, offset, end, file_hash if stream is None else stream
            ),
        )

    async def read_object(
        self,
        source: ObjectReader,
        obj: RemoteObject,
        offset: int,
        length: int,
        stream: Hashable | None = None,
    ) -> bytes:
        """Exactly min(length, obj.size - offset) bytes of a plain HTTP object (b"" at or
        after EOF), fetched from source when not cached (object_loader.py)."""
        end = min(offset + length, obj.size)

        async def block() -> list[bytes | memoryview]:
            return [
                await self._objects.read(
                    source, obj, offset, end, obj if stream is None else stream
                )
            ]

        return _joined(await self._counted(offset < end, block))

    async def _counted(
        self, any_bytes: bool, read: Callable[[], Awaitable[list[bytes | memoryview]]]
    ) -> list[bytes | memoryview]:
        """Run a read (when it asks for any bytes), counted in the stats."""
        self.stats.reads += 1
        if not any_bytes:
            return []
        try:
            parts = await read()
        except ReadError:
            self.stats.errors += 1
            raise
        self.stats.bytes_read += sum(map(len, parts))
        return parts

    def around(
        self, file_hash: bytes, size: int, offset: int, end: int, page: int = 1
    ) -> tuple[int, bytes] | None:
        """What the kernel may cache beyond a read of bytes [offset, end), as (start, bytes):
        the whole chunks holding them if all are in memory (as right after a read of
        them), widened to whole pages of the given size when the chunks around are at
        hand too (memory, else the page cache). A chunk rarely ends on a page: without the
        neighbours' bytes, the page each chunk boundary falls in would never be handed
        over, and took a read of two chunks of its own."""
        fmap = self._maps.peek(file_hash, size)
        if fmap is None:
            return None
        first, last = fmap.span(offset, end)
        memory = self._chunks.memory
        chunks = [memory.peek(fmap.chunk_hash(i), b"") for i in range(first, last)]
        if not all(chunks):
            return None
        start, stop = fmap.start(first), fmap.ends[last - 1]
        lo, hi = start // page * page, min(-(-stop // page) * page, size)
        before, after = fmap.span(lo, lo + 1)[0], fmap.span(hi - 1, hi)[1]
        wider = self._at_hand(fmap, [*range(before, first), *range(last, after)])
        if wider is None:
            return start, b"".join(chunks)
        joined = b"".join([*wider[: first - before], *chunks, *wider[first - before :]])
        at = lo - fmap.start(before)
        return lo, joined[at : at + hi - lo]

    def _at_hand(self, fmap: FileMap, indices: list[int]) -> list[ChunkData] | None:
        """The chunks at indices if all are at hand (memory, else the page cache), or None;
        never waits."""
        memory = self._chunks.memory
        got = [memory.peek(fmap.chunk_hash(i), b"") for i in indices]
        missing = [fmap.chunk_hash(i) for i, c in zip(indices, got, strict=True) if not c]
        if not missing:
            return got
        found = self._cache.chunks_at_hand(missing)
        if found is None:
            return None
        return [c or found[fmap.chunk_hash(i)] for i, c in zip(indices, got, strict=True)]

    def preload(self, backend: CasReader, files: Sequence[tuple[bytes, int]]) -> None:
        """Start loading the maps of files (file hash, size) about to be read, many to a
        request where backend allows (map_loader.py); reads of them then fetch the chunks
        of the next ones along (chunk_loader.py)."""
        self._maps.preload(backend, files, self._chunks.want)

    def end_stream(self, stream: Hashable) -> None:
        """Stop tracking a stream named in read() (its file was closed)."""
        self._prefetcher.end(stream)

    def cached_fraction(self, file_hash: bytes, size: int) -> float:
        """Fraction of the file's bytes whose chunks are in the disk cache.

        0.0 until the file's map is loaded (by a read): without it the chunks are unknown,
        and finding them would take a backend call. An empty file is wholly cached. Costs
        a lookup per chunk, about 6 ms per GiB of file.
        """
        if size == 0:
            return 1.0
        fmap = self._maps.peek(file_hash, size)
        if fmap is None:
            return 0.0
        has = self._cache.has
        cached = prev = 0
        for i, e in enumerate(fmap.ends):
            if has(fmap.chunk_hash(i)):
                cached += e - prev
            prev = e
        return cached / size

    async def _read(
        self,
        backend: CasReader,
        file_hash: bytes,
        size: int,
        offset: int,
        end: int,
        stream: Hashable,
    ) -> list[bytes | memoryview]:
        fmap = self._maps.find(file_hash, size)
        if fmap is None:
            fmap = await self._maps.load(
                backend, file_hash, size, lambda m: self._claim_early(backend, m, offset, end)
            )
        first, last = fmap.span(offset, end)
        memory = self._chunks.memory
        chunks: list[ChunkData] = []  # b"" for a chunk not in memory: no chunk is empty
        missing: list[int] = []
        for i in range(first, last):
            c = memory.get(fmap.chunk_hash(i), b"")
            if not c:
                missing.append(i)
            chunks.append(c)
        hits = len(chunks) - len(missing)
        self.stats.memory_hits += hits
        self.stats.cache_hits += hits
        if missing and self._fill_at_hand(fmap, first, missing, chunks):
            missing = []
        if not missing:
            self._prefetch(backend, fmap, stream, offset, end)
            return _parts(fmap, first, chunks, offset, end)
        pendings = self._chunks.claim(backend, fmap, missing)
        self._prefetch(backend, fmap, stream, offset, end)
        got: dict[bytes, ChunkData] = {}
        for p in pendings:
            got.update(await p.wait())
        for i in missing:
            chunks[i - first] = got[fmap.chunk_hash(i)]
        return _parts(fmap, first, chunks, offset, end)

    def _fill_at_hand(
        self, fmap: FileMap, first: int, missing: list[int], chunks: list[ChunkData]
    ) -> bool:
        """Fill in the missing chunks, and keep them in memory, if the disk cache has them
        all at hand (in the page cache) to read without a thread hop, and they are few."""
        if sum(fmap.ends[i] - fmap.start(i) for i in missing) > AT_HAND_BYTES:
            return False
        found = self._at_hand(fmap, missing)
        if found is None:
            return False
        memory = self._chunks.memory
        for i, c in zip(missing, found, strict=True):
            chunks[i - first] = c
            memory.put(fmap.chunk_hash(i), c)
        self.stats.disk_hits += len(missing)
        self.stats.cache_hits += len(missing)
        return True

    def _claim_early(self, backend: CasReader, fmap: FileMap, offset: int, end: int) -> None:
        """Start loading the chunks of bytes [offset, end) by a map still being checked
        (map_loader.py): a cold read's first bytes need not wait for every hash. The read
        then joins these loads through the checked map."""
        first, last = fmap.span(offset, end)
        memory = self._chunks.memory
        todo = [i for i in range(first, last) if fmap.chunk_hash(i) not in memory]
        self._chunks.claim(backend, fmap, todo)
        self.stats.early_loads += len(todo)

    def _prefetch(
        self, backend: CasReader, fmap: FileMap, stream: Hashable, offset: int, end: int
    ) -> None:
        """Tell the prefetch policy of a read; claim in the background what it asks for."""
        window = self._prefetcher.on_read(stream, offset, end, fmap.size)
        if window is not None:
            self._prefetcher.claimed(stream, self._chunks.prefetch(backend, fmap, *window))

    def _gauges(self) -> dict[str, int]:
        return {
            "cache_bytes": self._cache.used_bytes,
            "cache_limit": self._cache.max_bytes,
            "cache_chunks": len(self._cache),
            "cache_bad_files": self._cache.bad_files,
            "memory_bytes": self._chunks.memory.total,
            "object_memory_bytes": self._objects.memory.total,
            "memory_limit": self._chunks.memory.capacity,
            "maps": len(self._maps),
            "inflight_chunks": self._chunks.inflight,
            "prefetch_groups": self._chunks.prefetching,
            "write_backlog_bytes": self._writer.backlog,
        }


def _parts(
    fmap: FileMap, first: int, chunks: list[ChunkData], offset: int, end: int
) -> list[bytes | memoryview]:
    """Bytes [offset, end) of the file from its chunks first, first + 1, ...: the chunks
    whole, the first and last cut down as views (nothing is copied)."""
    start = fmap.start(first)
    if len(chunks) == 1:
        return [memoryview(chunks[0])[offset - start : end - start]]
    last_start = fmap.start(first + len(chunks) - 1)
    parts: list[bytes | memoryview] = [memoryview(chunks[0])[offset - start :]]
    parts += chunks[1:-1]
    parts.append(memoryview(chunks[-1])[: end - last_start])
    return parts


def _joined(parts: list[bytes | memoryview]) -> bytes:
    """The parts of a read as one bytes (a whole bytes part as it is, not copied)."""
    if len(parts) == 1 and isinstance(parts[0], bytes):
        return parts[0]
    return b"".join(parts)
