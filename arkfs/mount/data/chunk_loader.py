"""Chunks for the data path: claimed in groups, each loaded once, from the disk cache or a
backend, into memory (chunk_memory.py).

Missing chunks are claimed in groups: runs of consecutive chunks of one xorb, at most
group_bytes each (GROUP_BYTES for the mount). A chunk another read or the prefetcher
already claimed is waited for, not fetched twice. Each group is one background job:
chunks in the disk cache are read and checked in one worker-thread call; the others are
fetched, one backend call per run with the exact packed byte range from the map, then
decompressed and checked against their chunk hashes in one worker-thread call (in place
when they are few: jobs.run_cpu), and
written to the disk cache afterwards (cache_writer.py). With no fetch URL for a xorb (a
map from disk) or an expired one, the loader asks for a reconstruction of just the run's
bytes. Failures are not remembered: the next read tries again, so reads work again once
a backend is back.

A reader that will read many files says so (want(): a get's files, their maps preloaded).
A read's fetch then brings along the chunks of those files that follow its own in the
same xorb, READ_AHEAD bytes at most, checked against the xorb's verified footer: many
small files published together come in one request, not one each. They are claimed like
any other, so a read of them joins that fetch.

Loaded chunks go into memory (memory_bytes of the buffers holding them: a stored chunk
is a view of its fetch, not a copy), which reads use directly. Prefetch claims
background groups: at most PREFETCH_GROUPS run at once; prefetch never queues, it claims
only what it can start now, so a group a read joins is always under way. The in-flight
table holds only chunks of running groups: those of the reads in progress plus the
prefetch groups.
"""

import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, nullcontext

import trio

from arkfs.backend.base import Blamable, CasReader
from arkfs.mount.data.backend_calls import FetchUrls, call_backend
from arkfs.mount.data.chunk_memory import ChunkMemory
from arkfs.mount.data.errors import BadBytes, Expired, ReadError
from arkfs.mount.data.file_map import FileMap, decode_ahead, decode_run
from arkfs.mount.data.jobs import Pending, run_cpu
from arkfs.mount.data.parts import Parts
from arkfs.xet.compression import ChunkData
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Term
from arkfs.xet.xorb import XorbFooter

log = logging.getLogger(__name__)

MIB = 1024 * 1024
MEMORY_BYTES = 64 * MIB  # buffers of the decoded chunks kept in memory (chunk_memory.py)
GROUP_BYTES = 8 * MIB  # most decoded bytes one group loads
PREFETCH_GROUPS = 4
READ_AHEAD = 4 * MIB  # most bytes of wanted chunks one read's fetch brings along
WANTED_CHUNKS = 1 << 16  # chunks want() keeps at most (about 10 MB), the newest

Chunks = dict[bytes, ChunkData]  # chunk hash -> decoded, verified bytes
Ahead = tuple[XorbFooter, int, int]  # a xorb's verified footer, chunks [start, end) of it
Footers = Callable[[bytes], XorbFooter | None]  # the verified footer of a xorb, if at hand


def _runs(fmap: FileMap, indices: Sequence[int]) -> list[list[int]]:
    """Split map indices into runs of consecutive chunks of one xorb."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and fmap.follows(runs[-1][-1], i):
            runs[-1].append(i)
        else:
            runs.append([i])
    return runs


class ChunkLoader:
    """Loads the chunks of file maps once each, into memory (see the module docstring)."""

    def __init__(
        self,
        parts: Parts,
        urls: FetchUrls,
        memory_bytes: int = MEMORY_BYTES,
        group_bytes: int = GROUP_BYTES,
        footers: Footers = lambda xorb_hash: None,
    ) -> None:
        self._parts = parts
        self._urls = urls
        self._group_bytes = group_bytes
        self._footers = footers
        # (xorb, chunk index) to be read soon, oldest first: the oldest are let go past
        # WANTED_CHUNKS (files a reader was to read and did not: an interrupted cp)
        self._wanted: OrderedDict[tuple[bytes, int], None] = OrderedDict()
        self.memory = ChunkMemory(memory_bytes)  # chunk hash -> decoded chunk
        self._inflight: dict[bytes, Pending[Chunks]] = {}
        self._prefetching = 0

    @property
    def inflight(self) -> int:
        """Chunks claimed and not loaded yet."""
        return len(self._inflight)

    @property
    def prefetching(self) -> int:
        """Prefetch groups running."""
        return self._prefetching

    def want(self, terms: Iterable[Term]) -> None:
        """Note that the chunks of terms (of files about to be read) are wanted: another
        read's fetch may bring them along (see the module docstring)."""
        for t in terms:
            self._wanted.update(dict.fromkeys((t.xorb_hash, i) for i in range(t.start, t.end)))
        while len(self._wanted) > WANTED_CHUNKS:
            self._wanted.popitem(last=False)

    def claim(
        self, backend: CasReader, fmap: FileMap, indices: Sequence[int]
    ) -> list[Pending[Chunks]]:
        """The loads of the chunks at indices, for a read: joined if in flight, else started."""
        return self._claim(backend, fmap, indices, prefetch=False)[0]

    def prefetch(self, backend: CasReader, fmap: FileMap, start: int, stop: int) -> int:
        """Claim the chunks of bytes [start, stop) not in memory or in flight, in the
        background, as far as PREFETCH_GROUPS allows; return where the claim ended."""
        if not self._parts.host.running:
            return start
        first, last = fmap.span(start, stop)
        todo = [
            i
            for i in range(first, last)
            if (h := fmap.chunk_hash(i)) not in self.memory and h not in self._inflight
        ]
        _, done = self._claim(backend, fmap, todo, prefetch=True)
        return fmap.start(todo[done]) if done < len(todo) else fmap.ends[last - 1]

    def _claim(
        self, backend: CasReader, fmap: FileMap, indices: Sequence[int], prefetch: bool
    ) -> tuple[list[Pending[Chunks]], int]:
        """Pending loads of the chunks at indices: joined if in flight, else started as groups.

        Prefetch starts groups only while fewer than PREFETCH_GROUPS run; it stops before
        the first chunk it could not claim. Returns the loads and how many indices were done.
        """
        # Before any claim: a claim must never be left unstarted.
        nursery = self._parts.host.nursery()
        pendings: dict[int, Pending[Chunks]] = {}
        groups: list[tuple[Pending[Chunks], list[int]]] = []
        group_bytes = 0
        done = len(indices)
        for k, i in enumerate(indices):
            h = fmap.chunk_hash(i)
            p = self._inflight.get(h)
            if p is None:
                size = fmap.ends[i] - fmap.start(i)
                if not groups or not (
                    fmap.follows(groups[-1][1][-1], i) and group_bytes + size <= self._group_bytes
                ):
                    if prefetch and self._prefetching >= PREFETCH_GROUPS:
                        done = k
                        break
                    self._prefetching += prefetch
                    groups.append((Pending(), []))
                    group_bytes = 0
                p, run = groups[-1]
                run.append(i)
                group_bytes += size
                self._inflight[h] = p
            pendings[id(p)] = p
        ahead = None
        if groups and not prefetch and self._wanted:
            ahead = self._ahead(fmap, *groups[-1])
        for p, run in groups:
            extra = ahead if run is groups[-1][1] else None
            nursery.start_soon(self._group, backend, fmap, run, p, prefetch, extra)
        return list(pendings.values()), done

    def _ahead(self, fmap: FileMap, pending: Pending[Chunks], run: list[int]) -> Ahead | None:
        """The wanted chunks right after run in its xorb, READ_AHEAD bytes at most, claimed
        for pending: run's fetch brings them along. None if there are none, if the xorb's
        footer is not at hand (nothing to check them against), or if a chunk of run is in
        the disk cache (the fetch must cover run whole)."""
        xh = fmap.xorbs[fmap.xorb_of[run[-1]]]
        footer = self._footers(xh)
        cache = self._parts.cache
        if footer is None or any(cache.has(fmap.chunk_hash(i)) for i in run):
            return None
        start = end = fmap.index[run[-1]] + 1
        room = READ_AHEAD
        while end < footer.num_chunks:
            h, size = footer.chunk_hashes[end], footer.unpacked_size(end)
            taken = h in self._inflight or h in self.memory or cache.has(h)
            if (xh, end) not in self._wanted or taken or size > room:
                break
            room -= size
            end += 1
        if end == start:
            return None
        for h in footer.chunk_hashes[start:end]:
            self._inflight[h] = pending
        return footer, start, end

    async def _group(
        self,
        backend: CasReader,
        fmap: FileMap,
        run: list[int],
        pending: Pending[Chunks],
        prefetch: bool,
        ahead: Ahead | None = None,
    ) -> None:
        """Load the chunks of run (disk cache, else backend), and those ahead (fetched with
        run: none of run is on disk), for everyone waiting on pending."""
        hashes = [fmap.chunk_hash(i) for i in run]
        extra = list(ahead[0].chunk_hashes[ahead[1] : ahead[2]]) if ahead else []
        fetched: Chunks = {}

        async def load() -> Chunks:
            found = await self._from_disk(hashes, prefetch) if ahead is None else {}
            todo = [i for i, h in zip(run, hashes, strict=True) if h not in found]
            for sub in _runs(fmap, todo):  # with ahead: run itself, the one run
                decoded, more = await self._fetch_run(backend, fmap, sub, prefetch, ahead)
                fetched.update(zip((fmap.chunk_hash(i) for i in sub), decoded, strict=True))
                fetched.update(zip(extra, more, strict=True))
                self._parts.stats.prefetched_bytes += sum(map(len, more))
            chunks = found | fetched
            self._remember(chunks)
            xh = fmap.xorbs[fmap.xorb_of[run[0]]]
            done = [fmap.index[i] for i in run]
            done += range(ahead[1], ahead[2]) if ahead is not None else []
            for i in done:
                self._wanted.pop((xh, i), None)
            if prefetch:
                self._parts.stats.prefetched_bytes += sum(len(c) for c in chunks.values())
            return chunks

        what = f"reading file {hash_to_string(fmap.file_hash)}"
        try:
            await pending.settle(what, load)
        finally:
            for h in hashes + extra:
                if self._inflight.get(h) is pending:
                    del self._inflight[h]
            self._prefetching -= prefetch
        if fetched:
            self._parts.writer.write_chunks(fetched)

    async def _from_disk(self, hashes: list[bytes], prefetch: bool) -> Chunks:
        """The chunks of hashes in the disk cache, checked (one worker-thread call)."""
        if not any(self._parts.cache.has(h) for h in hashes):
            return {}
        limiter = self._parts.limiters.background if prefetch else self._parts.limiters.disk
        found = await trio.to_thread.run_sync(self._parts.cache.get_chunks, hashes, limiter=limiter)
        self._parts.stats.disk_hits += len(found)
        self._parts.stats.cache_hits += len(found)
        return found

    async def _fetch_run(
        self,
        backend: CasReader,
        fmap: FileMap,
        run: list[int],
        prefetch: bool,
        ahead: Ahead | None = None,
    ) -> tuple[list[ChunkData], list[ChunkData]]:
        """Fetch the packed bytes of run (one xorb, consecutive chunks), and of the chunks
        ahead right after it; decode and check them.

        Bytes that fail their check, or a reply cut short, are fetched once more with a
        fresh URL before the read fails: a bit flipped in transit is not worth an EIO.
        """
        xh = fmap.xorbs[fmap.xorb_of[run[0]]]
        what = f"file {hash_to_string(fmap.file_hash)}"
        cpu = self._parts.limiters.background if prefetch else self._parts.limiters.cpu
        self._parts.stats.cache_misses += len(run)
        for attempt in (1, 2):
            try:
                data = await self._fetch_bytes(backend, fmap, run, prefetch, attempt > 1, ahead)
                covers = fmap.ends[run[-1]] - fmap.start(run[0])
                if ahead is None:
                    decoded = await run_cpu(decode_run, data, fmap, run, covers=covers, limiter=cpu)
                    return decoded, []
                footer, start, end = ahead
                covers += footer.unpacked_ends[end - 1] - footer.unpacked_ends[start - 1]
                return await run_cpu(
                    decode_ahead, data, fmap, run, *ahead, covers=covers, limiter=cpu
                )
            except XetError as exc:
                problem = BadBytes(
                    f"{what}: xorb {hash_to_string(xh)} from {backend.name} fails "
                    f"verification: {exc}"
                )
            except BadBytes as exc:
                problem = exc
            if isinstance(backend, Blamable):  # the next attempt avoids that mirror
                backend.blame(xh, str(problem))
            if attempt == 1:
                log.warning("%s; fetching it again", problem)
        raise problem

    async def _fetch_bytes(
        self,
        backend: CasReader,
        fmap: FileMap,
        run: list[int],
        prefetch: bool,
        fresh: bool,
        ahead: Ahead | None,
    ) -> bytes:
        """The packed bytes of run, and of the chunks ahead, from backend, with a known URL
        unless fresh (or none is known); an expired URL is replaced once."""
        xh = fmap.xorbs[fmap.xorb_of[run[0]]]
        lo, hi = fmap.packed_start[run[0]], fmap.packed_end[run[-1]]
        chunks_end = fmap.index[run[-1]] + 1
        if ahead is not None:
            hi, chunks_end = ahead[0].packed_ends[ahead[2] - 1], ahead[2]
        what = f"file {hash_to_string(fmap.file_hash)}"
        limiter: AbstractAsyncContextManager[object] = (
            nullcontext() if prefetch else self._parts.limiters.fetch
        )
        url = None if fresh else self._urls.get(backend, xh)
        refreshed = url is None
        if url is None:
            url = await self._fresh_url(backend, fmap, run)
        while True:
            fr = FetchRange(url, fmap.index[run[0]], chunks_end, lo, hi - 1)
            try:
                async with limiter:
                    data = await call_backend(what, backend.fetch, xh, fr)
                break
            except Expired:  # the URL expired: ask for a new one, once
                if refreshed:
                    raise
                url = await self._fresh_url(backend, fmap, run)
                refreshed = True
        self._parts.stats.fetches += 1
        self._parts.stats.bytes_fetched += len(data)
        if len(data) != hi - lo:
            raise BadBytes(f"{what}: {backend.name} sent {len(data)} bytes, not {hi - lo}")
        return data

    async def _fresh_url(self, backend: CasReader, fmap: FileMap, run: list[int]) -> str:
        """A fetch URL for the xorb of run, from a reconstruction of the bytes run holds."""
        name = hash_to_string(fmap.file_hash)
        xh = fmap.xorbs[fmap.xorb_of[run[0]]]
        rec = await call_backend(
            f"file {name}",
            backend.reconstruction,
            fmap.file_hash,
            fmap.start(run[0]),
            fmap.ends[run[-1]],
        )
        self._parts.stats.url_refreshes += 1
        self._urls.keep(backend, rec)
        url = self._urls.get(backend, xh)
        if url is None:
            raise ReadError(
                f"file {name}: {backend.name} gave no URL for xorb {hash_to_string(xh)}"
            )
        return url

    def _remember(self, chunks: Chunks) -> None:
        """Keep decoded chunks in memory."""
        memory = self.memory
        for h, c in chunks.items():
            memory.put(h, c)
