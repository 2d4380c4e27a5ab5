"""File maps for the data path: from memory, else the disk cache, else built from a backend.

A file's map (file_map.py) comes from a bounded LRU in memory (MAP_CHUNKS chunks), else
from the disk cache (checked again as it loads), else it is built and checked against the
file hash, then written to the disk cache. Building it takes one reconstruction of the
whole file (metadata only: no chunk data) and each xorb footer once (FOOTERS_IN_MEMORY in
memory, then those the reconstruction carries (an arkfs server sends them: no round trip
per xorb; told those in memory, it leaves them out), then the disk cache, then the
backend). It must be the whole file: the file hash is the Merkle root of every chunk hash,
so no smaller set of terms can be checked against it, and unchecked terms could name any
xorb. It happens once per file, not per mount: the
map stays on disk. A map loads once however many reads ask for it at the same time; a
failure is not remembered, so the next read tries again.

A reader that knows which files it will read, and in what order (a get of a directory,
fsspec's cat of a list), or guesses it (a scan of a directory in the mount), preloads
their maps: those in the disk cache BATCH_FILES to a worker-thread call (one thread hop,
not one per file), the others from a backend that answers many files' reconstructions at
once (Batched), BATCH_FILES to a request, BATCHES_AT_ONCE requests at a time; each map
is then checked, or built and checked, as above, and a read of the file waits for it. A
map on disk that fails its check, a file the batch leaves out, or a batch that fails, is
asked for alone, as without a preload. The files are asked for a WINDOW at a time, two
windows ahead of the reads: windows 0 and 1 at once, and when a read reaches the first
file of window w, every window up to w + 2; so the maps of 100,000 files are never all
held, nor the first ones evicted before their reads. A batch's footers are checked once,
as it arrives, for all its files.
"""

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import NamedTuple, TypeAlias

import trio

from arkfs.backend.base import Batched, Blamable, CasReader
from arkfs.mount.data.backend_calls import FetchUrls, call_backend
from arkfs.mount.data.errors import ReadError, Unverified
from arkfs.mount.data.file_map import FileMap, build_map, layout_map
from arkfs.mount.data.jobs import Pending, run_cpu
from arkfs.mount.data.parts import Parts
from arkfs.util.lru import LRU
from arkfs.xet.errors import ReconstructionError, XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import BATCH_FILES, Reconstruction, Term
from arkfs.xet.trust import check_named, recorded_footer, verify_terms
from arkfs.xet.xorb import XorbFooter, footer_tail, parse_footer

log = logging.getLogger(__name__)

MAP_CHUNKS = 1 << 20  # chunks of all file maps in memory (~56 MB, ~64 GiB of files)
MAP_OVERHEAD = 64  # what a map costs beyond its chunks, in chunks
FOOTERS_IN_MEMORY = 32  # for building maps of many small files in one xorb
INLINE_TERM_BYTES = 8 * 1024  # what checking one term weighs against jobs.INLINE_BYTES
BATCHES_AT_ONCE = 2  # batch requests under way: the first files' maps come first
WINDOW = 500  # files of a preload asked for at a time, a window ahead of the reads


Early = Callable[[FileMap], None]  # told the unchecked map, to start fetching by it


class BatchReply(NamedTuple):
    """A batch request's reconstructions, and the footers they carry that pass their checks."""

    recs: dict[bytes, Reconstruction]
    footers: dict[bytes, XorbFooter]


Batch: TypeAlias = Pending[BatchReply]
DiskMaps: TypeAlias = Pending[dict[bytes, FileMap | None]]  # file hash -> its map on disk


def _checked_footers(recs: Mapping[bytes, Reconstruction]) -> dict[bytes, XorbFooter]:
    """The footers recs carry, each parsed and checked once however many files name its
    xorb (blocking); one that fails is left out, for the files that need it to find on
    their own and say so."""
    records = {xh: r for rec in recs.values() for xh, r in rec.footers.items()}
    checked = {}
    for xh, record in records.items():
        with contextlib.suppress(XetError):
            checked[xh] = recorded_footer(record, xh)
    return checked


def _sent_footers(rec: Reconstruction, xorbs: list[bytes]) -> dict[bytes, XorbFooter]:
    """The footers of xorbs that rec carries, parsed, not yet checked (blocking).
    Raises XetError."""
    return {xh: parse_footer(*footer_tail(rec.footers[xh])) for xh in xorbs if xh in rec.footers}


async def _check_sent(
    file_hash: bytes,
    size: int,
    terms: Sequence[Term],
    footers: Mapping[bytes, XorbFooter],
    sent: Mapping[bytes, XorbFooter],
    cpu: trio.CapacityLimiter,
) -> None:
    """The trust chain for a map laid out from sent footers: each against its xorb hash,
    and the terms against them, the size and the file hash. The two halves run in two
    worker threads side by side (their Merkle roots are computed without the GIL): a cold
    read's first byte waits for both. Raises the footers' XetError if both fail, as a
    check one after the other would."""
    errors: dict[int, XetError] = {}

    def footers_named() -> None:
        for xh, footer in sent.items():
            check_named(footer, xh)

    def terms_verified() -> None:
        verify_terms(file_hash, size, terms, footers)

    async def check(order: int, part: Callable[[], None]) -> None:
        try:
            await trio.to_thread.run_sync(part, limiter=cpu)
        except XetError as exc:
            errors[order] = exc

    async with trio.open_nursery() as nursery:
        nursery.start_soon(check, 0, footers_named)
        nursery.start_soon(check, 1, terms_verified)
    if errors:
        raise errors[min(errors)]


class _Windows:
    """A preload's windows of files, started in order (see the module docstring)."""

    def __init__(
        self, windows: list[list[tuple[bytes, int]]], ask: Callable[[list[tuple[bytes, int]]], None]
    ) -> None:
        self.windows, self.ask, self.started = windows, ask, 0

    def start(self, upto: int) -> None:
        """Ask for the windows before index upto not yet asked for."""
        while self.started < min(upto, len(self.windows)):
            self.ask(self.windows[self.started])
            self.started += 1


class MapLoader:
    """The verified maps of files, each loaded once, the recent ones kept in memory."""

    def __init__(
        self,
        parts: Parts,
        urls: FetchUrls,
    ) -> None:
        self._parts = parts
        self._urls = urls
        self._maps: LRU[tuple[bytes, int], FileMap] = LRU(MAP_CHUNKS, keep_one=True)
        self._loads: dict[tuple[bytes, int], Pending[FileMap]] = {}
        self._footers: LRU[bytes, XorbFooter] = LRU(FOOTERS_IN_MEMORY)
        self._batches = trio.CapacityLimiter(BATCHES_AT_ONCE)
        # The preloads whose later windows a read of the file starts, and up to which one.
        self._after: dict[tuple[bytes, int], list[tuple[_Windows, int]]] = {}

    def __len__(self) -> int:
        """How many maps are in memory."""
        return len(self._maps)

    def find(self, file_hash: bytes, size: int) -> FileMap | None:
        """The map in memory, now the most recently used; None if it is not there. A read
        of the first file of a preload's window starts the windows up to two after it."""
        key = (file_hash, size)
        if self._after and (runs := self._after.pop(key, None)) is not None:
            for run, upto in runs:
                run.start(upto)
        return self._maps.get(key)

    def footer(self, xorb_hash: bytes) -> XorbFooter | None:
        """The footer of xorb_hash if one in memory passed its checks; else None."""
        return self._footers.peek(xorb_hash)

    def peek(self, file_hash: bytes, size: int) -> FileMap | None:
        """The map in memory, leaving the LRU order alone; None if it is not there."""
        return self._maps.peek((file_hash, size))

    async def load(
        self, backend: CasReader, file_hash: bytes, size: int, early: Early | None = None
    ) -> FileMap:
        """The file's map, loaded once however many reads ask for it at the same time.

        early, if this call starts the load and the map is built from footers the
        reconstruction carried, is told the map before it is checked, so the read can
        fetch meanwhile (its chunks are checked against their own hashes either way, and
        the read uses them only through the checked map)."""
        key = (file_hash, size)
        p = self._loads.get(key)
        if p is None:
            nursery = self._parts.host.nursery()
            p = self._loads[key] = Pending()
            nursery.start_soon(self._load, backend, key, p, early)
        return await p.wait()

    def preload(
        self,
        backend: CasReader,
        files: Sequence[tuple[bytes, int]],
        then: Callable[[Iterable[Term]], None],
    ) -> None:
        """Start loading the maps of files (file hash, size), to be read in that order, a
        WINDOW at a time (the module docstring); then is told the terms of each batch
        backend sends as it comes, before its maps are checked."""
        if not self._parts.host.running:
            return
        keys = list(dict.fromkeys(files))
        windows = [keys[at : at + WINDOW] for at in range(0, len(keys), WINDOW)]
        run = _Windows(windows, lambda window: self._preload(backend, window, then))
        run.start(2)
        for w, window in enumerate(windows[:-2]):  # window w + 2 starts at w
            self._after.setdefault(window[0], []).append((run, w + 3))

    def _preload(
        self,
        backend: CasReader,
        files: list[tuple[bytes, int]],
        then: Callable[[Iterable[Term]], None],
    ) -> None:
        """Start loading the maps of files not in memory or loading, in batches: from the
        disk cache, else from backend if it answers batches."""
        if not self._parts.host.running:
            return
        cache = self._parts.cache
        on_disk: list[tuple[bytes, int]] = []
        asked: list[tuple[bytes, int]] = []
        for key in files:
            if key not in self._maps and key not in self._loads:
                (on_disk if cache.has_map(key[0]) else asked).append(key)
        nursery = self._parts.host.nursery()
        for i in range(0, len(on_disk), BATCH_FILES):
            keys = on_disk[i : i + BATCH_FILES]
            disk: DiskMaps = Pending()
            what = f"reading {len(keys)} file maps from the disk cache"
            nursery.start_soon(disk.settle, what, lambda k=keys: self._read_maps(k))
            for key in keys:
                pending = self._loads[key] = Pending()
                nursery.start_soon(self._load, backend, key, pending, None, None, disk)
        if not isinstance(backend, Batched):
            return
        for i in range(0, len(asked), BATCH_FILES):
            keys = asked[i : i + BATCH_FILES]
            batch: Batch = Pending()
            what = f"asking {backend.name} for {len(keys)} files"
            nursery.start_soon(batch.settle, what, lambda k=keys: self._ask(backend, k, then))
            for key in keys:
                pending = self._loads[key] = Pending()
                nursery.start_soon(self._load, backend, key, pending, None, batch)

    async def _read_maps(self, keys: list[tuple[bytes, int]]) -> dict[bytes, FileMap | None]:
        """The maps of keys' files from the disk cache, in one worker-thread call."""
        get_map = self._parts.cache.get_map
        return await trio.to_thread.run_sync(
            lambda: {file_hash: get_map(file_hash) for file_hash, _ in keys},
            limiter=self._parts.limiters.disk,
        )

    async def _ask(
        self,
        backend: Batched,
        keys: list[tuple[bytes, int]],
        then: Callable[[Iterable[Term]], None],
    ) -> BatchReply:
        """The reconstructions of keys' files in one request (BATCHES_AT_ONCE at a time),
        their terms told to then, and the footers they carry, checked once for them all."""
        held = tuple(self._footers)
        hashes = [file_hash for file_hash, _ in keys]
        try:
            async with self._batches:
                what = f"reconstructions of {len(keys)} files"
                recs = await call_backend(what, backend.reconstructions, hashes, held)
        except ReadError as exc:
            log.warning("%s; asking for each file alone", exc)
            return BatchReply({}, {})
        then(t for rec in recs.values() for t in rec.terms)
        footers = await trio.to_thread.run_sync(
            _checked_footers, recs, limiter=self._parts.limiters.cpu
        )
        self._parts.stats.footers_sent += len(footers)
        for xh, footer in footers.items():  # checked: the next batches need not carry them
            self._footers.put(xh, footer)
        if footers:
            self._parts.writer.write_footers(list(footers.values()))
        return BatchReply(recs, footers)

    async def _load(
        self,
        backend: CasReader,
        key: tuple[bytes, int],
        pending: Pending[FileMap],
        early: Early | None,
        batch: Batch | None = None,
        disk: DiskMaps | None = None,
    ) -> None:
        try:
            await pending.settle(
                f"mapping file {hash_to_string(key[0])}",
                lambda: self._get(backend, *key, early, batch, disk),
            )
        finally:
            del self._loads[key]

    async def _get(
        self,
        backend: CasReader,
        file_hash: bytes,
        size: int,
        early: Early | None,
        batch: Batch | None = None,
        disk: DiskMaps | None = None,
    ) -> FileMap:
        """The map from the disk cache (as disk read it, if given), else built from the
        backend and written there; kept in memory either way."""
        cache = self._parts.cache
        fmap = None
        if disk is not None:
            fmap = (await _read(disk)).get(file_hash)
        elif cache.has_map(file_hash):  # no thread hop to find no file
            fmap = await trio.to_thread.run_sync(
                cache.get_map, file_hash, limiter=self._parts.limiters.disk
            )
        if fmap is None:
            fmap = await self._build_checked(backend, file_hash, size, early, batch)
            self._parts.stats.maps_loaded += 1
            self._parts.writer.write_map(fmap)
        elif fmap.size != size:
            raise ReadError(
                f"file {hash_to_string(file_hash)} has {fmap.size} bytes, not {size} "
                "as the manifest says"
            )
        else:
            self._parts.stats.maps_from_disk += 1
        self._maps.put((file_hash, size), fmap, len(fmap) + MAP_OVERHEAD)
        return fmap

    async def _build_checked(
        self,
        backend: CasReader,
        file_hash: bytes,
        size: int,
        early: Early | None,
        batch: Batch | None = None,
    ) -> FileMap:
        """_build; a reconstruction that fails verification is asked once more, alone: if it
        came in a batch (one log line says so), or from mirrors, whose sender is blamed
        (one log line names it) and the others asked first."""
        try:
            return await self._build(backend, file_hash, size, early, batch)
        except Unverified as exc:
            if isinstance(backend, Blamable):
                backend.blame_reconstruction(file_hash, exc.reason)
            elif file_hash in (await _batched(batch)).recs:
                log.warning("%s (sent in a batch); asking for it alone", exc)
            else:
                raise
        return await self._build(backend, file_hash, size, None)

    async def _build(
        self,
        backend: CasReader,
        file_hash: bytes,
        size: int,
        early: Early | None,
        batch: Batch | None = None,
    ) -> FileMap:
        """File Reconstruction of the whole file (batch's, if it holds it), footers, then
        the checks of build_map."""
        what = f"file {hash_to_string(file_hash)}"
        reply = await _batched(batch)
        rec = reply.recs.get(file_hash)
        if rec is None:
            held = tuple(self._footers)  # no need to send these again (FOOTERS_HELD_HEADER)
            rec = await call_backend(what, backend.reconstruction, file_hash, 0, size, held)
        if rec.offset_into_first_range:
            raise ReadError(f"{what}: {backend.name} skips bytes at the start of the file")
        self._urls.keep(backend, rec)
        xorbs = list(dict.fromkeys(t.xorb_hash for t in rec.terms))
        known = reply.footers  # checked already, with the batch
        footers = {
            xh: f for xh in xorbs if (f := self._footers.peek(xh) or known.get(xh)) is not None
        }
        need = [xh for xh in xorbs if xh not in footers]
        cpu = self._parts.limiters.cpu
        sent: dict[bytes, XorbFooter] = {}
        if need:
            try:
                sent = await trio.to_thread.run_sync(_sent_footers, rec, need, limiter=cpu)
            except XetError as exc:
                why = f"a malformed footer: {exc}"
                raise Unverified(f"{what}: {backend.name} sent {why}", why) from None
            footers |= sent
            need = [xh for xh in need if xh not in footers]
        fetched: dict[bytes, XorbFooter] = {}
        if need:
            footers |= await trio.to_thread.run_sync(
                self._disk_footers, need, limiter=self._parts.limiters.disk
            )
            fetched = await self._fetch_footers(
                backend, what, rec, [xh for xh in need if xh not in footers]
            )
            footers |= fetched
        try:
            if not sent:
                # its cost follows the terms (the server's to choose) as much as the size
                covers = max(size, len(rec.terms) * INLINE_TERM_BYTES)
                fmap = await run_cpu(
                    build_map, file_hash, size, rec.terms, footers, covers=covers, limiter=cpu
                )
            else:
                # First Byte: lay the map out and let the read fetch by it, then check it.
                try:
                    fmap = await trio.to_thread.run_sync(
                        layout_map, file_hash, size, rec.terms, footers, limiter=cpu
                    )
                except (KeyError, IndexError):
                    raise ReconstructionError("its terms name chunks its footers lack") from None
                if early is not None and len(fmap) and fmap.ends[-1] == size:
                    early(fmap)  # not for a size the manifest and terms disagree on
                await _check_sent(file_hash, size, rec.terms, footers, sent, cpu)
        except XetError as exc:
            why = str(exc)
            raise Unverified(f"{what} from {backend.name} fails verification: {why}", why) from None
        self._parts.stats.footers_sent += len(sent)
        fetched |= sent
        # Only footers that gave a verified map are kept: a wrong one must not outlive
        # the failed read it caused.
        for xh in xorbs:
            self._footers.put(xh, footers[xh])
        if fetched:
            self._parts.writer.write_footers(list(fetched.values()))
        return fmap

    def _disk_footers(self, xorbs: list[bytes]) -> dict[bytes, XorbFooter]:
        """Footers found in the disk cache, checked (blocking)."""
        found = {}
        for xh in xorbs:
            footer = self._parts.cache.get_footer(xh)
            if footer is not None:
                found[xh] = footer
        return found

    async def _fetch_footers(
        self, backend: CasReader, what: str, rec: Reconstruction, xorbs: list[bytes]
    ) -> dict[bytes, XorbFooter]:
        """Footers of xorbs from the backend, in parallel; the first failure is raised."""
        got: dict[bytes, XorbFooter] = {}
        errors: list[ReadError] = []

        async def one(xh: bytes) -> None:
            try:
                async with self._parts.limiters.fetch:
                    footer = await call_backend(what, backend.footer, xh, rec.fetch[xh][0])
            except ReadError as exc:
                errors.append(exc)
                return
            if footer.xorb_hash != xh:
                errors.append(ReadError(f"{what}: {backend.name} sent the footer of another xorb"))
                return
            self._parts.stats.footer_fetches += 1
            got[xh] = footer

        async with trio.open_nursery() as nursery:
            for xh in xorbs:
                nursery.start_soon(one, xh)
        if errors:
            raise errors[0]
        return got


async def _read(disk: DiskMaps) -> dict[bytes, FileMap | None]:
    """The maps disk read (none if it failed: each file's map is then built)."""
    try:
        return await disk.wait()
    except ReadError:
        return {}


async def _batched(batch: Batch | None) -> BatchReply:
    """What batch brought (nothing if there is no batch, or it failed: its error is each
    file's own request's to tell)."""
    if batch is None:
        return BatchReply({}, {})
    try:
        return await batch.wait()
    except ReadError:
        return BatchReply({}, {})
