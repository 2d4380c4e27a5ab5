"""MirroredBackend: several servers holding the same archives, as one backend.

XET content addressing makes mirrors safe: every chunk is checked against its hash above
this layer, so a mirror can be slow or down or wrong, never trusted. So:

- every read goes to a healthy mirror first; when it fails or does not answer within
  HEDGE_AFTER seconds, the next mirror is asked too (a hedged request), and the first
  good answer wins (the others are cancelled);
- reconstructions (one file's, or many files' in one batch where the mirror answers
  that) rotate over the mirrors, and xorb ranges are spread across them by
  xorb hash: a mirror that did not hand out the URL is asked for its own (from a
  reconstruction of the same bytes, remembered per xorb), assuming, as replicas do, that
  mirrors hold the same xorbs byte for byte;
- a mirror that did not answer is asked last while it is down (net.reachability, the
  one unreachable-endpoint rule), until it answers again; one that sent bad bytes (a
  footer failing its hash here, chunks or a reconstruction failing their checks in the
  data path, which calls blame() or blame_reconstruction()) for BAD_TIME, with one log
  line naming it; such a mirror is never asked as a hedge, only once the one before it
  failed;
- a mirror much slower than the others is asked after them, as CVMFS demotes hosts: each
  mirror's reply time (per MiB, for fetches over one; manifests are not timed) is
  smoothed (SMOOTHING), and one whose smoothed time is over SLOW_FACTOR times the
  fastest's (and over SLOW_FLOOR) is slow, with one log line; a mirror not yet measured
  counts as fast, so it is asked; a slow mirror's estimate is forgotten once PROBE_AFTER
  old, so that it is asked again and re-measured;
- an archive version is read from the first mirror that answers, and checked against the
  same version on the others that answer within AGREE_TIME: mirrors that disagree on any
  file's hash make it an error (BadReply), never a mix.
"""

import logging
import math
import time
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import TypeVar

import trio

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.backend.base import (
    Backend,
    BackendError,
    BadReply,
    Batched,
    NotBound,
    Refused,
    Unauthorized,
    Unreachable,
)
from arkfs.net.reachability import Reachability
from arkfs.util.lru import LRU
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction
from arkfs.xet.shard import Shard
from arkfs.xet.xorb import XorbFooter

log = logging.getLogger(__name__)

HEDGE_AFTER = 2.0  # seconds before a read is also asked of the next mirror
BAD_TIME = 300.0  # seconds a mirror that sent bad bytes is asked last
AGREE_TIME = 5.0  # seconds the other mirrors get to confirm an archive version
REMEMBERED = 1 << 16  # xorbs whose URLs and reconstruction ranges are remembered
SMOOTHING = 0.3  # weight of a new reply time in a mirror's smoothed reply time
SLOW_FACTOR = 4.0  # a mirror this many times slower than the fastest is asked last
SLOW_FLOOR = 0.1  # seconds: a smoothed reply time below this is never slow
WORK_UNIT = 1 << 20  # bytes of a fetch that count as one reply in a mirror's speed
PROBE_AFTER = 30.0  # seconds after which a slow mirror's estimate is forgotten (re-probed)
T = TypeVar("T")


def file_hashes(manifest: Manifest) -> dict[str, bytes | None]:
    """path -> XET file hash (None for a directory or symlink): what mirrors must agree on."""
    return {e.path: e.xet_hash for e in manifest.entries}


class _NoBatch(Refused):
    """A mirror answered no batch of reconstructions: the next one is asked."""


class MirroredBackend:
    """Mirrors of one archive side (see the module docstring); writes are refused."""

    def __init__(self, mirrors: list[Backend], *, hedge_after: float = HEDGE_AFTER) -> None:
        if len(mirrors) < 2:
            raise ValueError("mirrors need at least two backends")
        self.mirrors = mirrors
        self.name = "mirrors(" + ", ".join(m.name for m in mirrors) + ")"
        self.hedge_after = hedge_after
        self._avoid: dict[int, float] = {}  # mirror index -> until when it is asked last
        self._reach = Reachability()  # which mirrors (by index) just did not answer
        self._turn = 0  # rotates reconstructions over the mirrors
        self._owner: LRU[str, int] = LRU(REMEMBERED)  # fetch URL -> the mirror that gave it
        self._urls: LRU[tuple[int, bytes], str] = LRU(REMEMBERED)  # (mirror, xorb) -> URL
        self._ranges: LRU[bytes, tuple[bytes, int, int]] = LRU(REMEMBERED)  # xorb -> file range
        self._served: LRU[bytes, int] = LRU(REMEMBERED)  # xorb -> mirror of its last fetch
        self._rebuilt: LRU[bytes, int] = LRU(REMEMBERED)  # file -> mirror of its last terms
        self._latency: dict[int, tuple[float, float]] = {}  # mirror -> (smoothed s, when)
        self._slow: set[int] = set()  # mirrors asked after the others for being slow
        self._named: set[int] = set()  # slow mirrors the log has named

    def __repr__(self) -> str:
        return f"MirroredBackend({self.name!r})"

    @property
    def bytes_fetched(self) -> int:
        return sum(getattr(m, "bytes_fetched", 0) for m in self.mirrors)

    # --- health ------------------------------------------------------------------------

    def _order(self, first: int) -> list[int]:
        """Mirror indices starting at first: healthy ones, then slow ones, then avoided."""
        n = len(self.mirrors)
        rotated = [(first + i) % n for i in range(n)]
        now = time.monotonic()
        self._forget_old_estimates()
        return sorted(rotated, key=lambda i: (self._avoided(i, now), i in self._slow))

    def _avoided(self, index: int, now: float) -> bool:
        """Is mirror index asked last: down, or it sent bad bytes lately?"""
        return self._reach.is_down(str(index)) or self._avoid.get(index, 0.0) > now

    def _forget_old_estimates(self) -> None:
        """Drop the reply time of slow mirrors last measured PROBE_AFTER ago: unmeasured,
        a mirror is asked again, and its next reply measures it afresh."""
        now = trio.current_time()
        old = [i for i in self._slow if now - self._latency[i][1] >= PROBE_AFTER]
        for index in old:
            del self._latency[index]
        if old:
            self._rank()

    def _timed(self, index: int, seconds: float, finished: bool = True) -> None:
        """Count a reply time of mirror index (a lower bound if not finished: the call was
        cancelled) in its smoothed time."""
        old = self._latency.get(index)
        if old is None:
            smoothed = seconds
        elif finished or seconds > old[0]:
            smoothed = old[0] + SMOOTHING * (seconds - old[0])
        else:
            return
        self._latency[index] = (smoothed, trio.current_time())
        self._rank()

    def _rank(self) -> None:
        """Which mirrors are slow: over SLOW_FLOOR and SLOW_FACTOR times the fastest, an
        unmeasured mirror counting as fast (so it is asked, and measured). Only one slower
        than a measured mirror is named in the log, once until it is fast again."""
        times = {i: t for i, (t, _) in self._latency.items()}
        measured = min(times.values(), default=0.0)
        fastest = measured if len(times) == len(self.mirrors) else 0.0
        self._slow = {i for i, t in times.items() if t > max(SLOW_FLOOR, SLOW_FACTOR * fastest)}
        for i, t in times.items():
            name = self.mirrors[i].name
            if t > max(SLOW_FLOOR, SLOW_FACTOR * measured) and i not in self._named:
                self._named.add(i)
                log.warning(
                    "mirror %s is slow (%.2f s a reply, the fastest %.2f s); asking it last",
                    name, t, measured,
                )  # fmt: skip
            elif i not in self._slow and i in self._named:
                self._named.discard(i)
                log.info("mirror %s is no longer slow (%.2f s a reply)", name, t)

    def _mark(self, index: int, seconds: float, why: str) -> None:
        now = time.monotonic()
        if self._avoid.get(index, 0.0) <= now:
            log.warning(
                "mirror %s %s; asking the other mirrors first", self.mirrors[index].name, why
            )
        self._avoid[index] = max(self._avoid.get(index, 0.0), now + seconds)

    def blame(self, xorb_hash: bytes, why: str) -> None:
        """The bytes of xorb_hash last fetched here failed their check: avoid that mirror."""
        index = self._served.peek(xorb_hash)
        if index is not None:
            self._mark(index, BAD_TIME, f"sent bad bytes ({why})")

    def blame_reconstruction(self, file_hash: bytes, why: str) -> None:
        """The last reconstruction of file_hash failed verification: avoid its mirror."""
        index = self._rebuilt.peek(file_hash)
        if index is not None:
            self._mark(index, BAD_TIME, f"sent a reconstruction that fails verification ({why})")

    async def _first(
        self,
        order: list[int],
        call: Callable[[int], Awaitable[T]],
        hedge: float,
        units: float | None = 1.0,
    ) -> tuple[T, int]:
        """call(mirror) on the mirrors in order, each once the one before failed or took
        hedge seconds; the first success, and its mirror. NotBound only if every mirror
        said so; else a refusal, else Unreachable. Each reply time, divided by units (the
        reply's work: 1, or its MiB), counts in the mirror's speed; None: not counted."""
        done: list[tuple[T, int]] = []
        errors: list[tuple[int, BackendError]] = []

        async def attempt(index: int, failed: trio.Event, scope: trio.CancelScope) -> None:
            start = trio.current_time()
            try:
                result = await call(index)
            except trio.Cancelled:
                if units is not None:
                    self._timed(index, (trio.current_time() - start) / units, finished=False)
                raise
            except Unreachable as exc:
                if self._reach.failed(str(index), str(exc)):
                    log.warning(
                        "mirror %s is unreachable (%s); asking the other mirrors first",
                        self.mirrors[index].name, exc,
                    )  # fmt: skip
                errors.append((index, exc))
            except BadReply as exc:
                self._reach.answered(str(index))
                self._mark(index, BAD_TIME, f"sent a bad reply ({exc})")
                errors.append((index, exc))
            except BackendError as exc:
                self._reach.answered(str(index))
                errors.append((index, exc))
            else:
                self._reach.answered(str(index))
                if units is not None:
                    self._timed(index, (trio.current_time() - start) / units)
                done.append((result, index))
                scope.cancel()
            failed.set()

        now = time.monotonic()
        async with trio.open_nursery() as nursery:
            for position, index in enumerate(order):
                failed = trio.Event()
                nursery.start_soon(attempt, index, failed, nursery.cancel_scope)
                after = order[position + 1 :]
                # A mirror asked last (down, or it sent bad bytes) is never a hedge: it is
                # asked only once the one before it failed, however slow that one is.
                with trio.move_on_after(
                    math.inf if after and self._avoided(after[0], now) else hedge
                ):
                    await failed.wait()
        if done:
            return done[0]
        found = [e for _, e in errors]
        for kind in (NotBound, Unreachable):
            if not all(isinstance(e, kind) for e in found):
                found = [e for e in found if not isinstance(e, kind)]
        raise found[0]

    # --- the NMA: the first mirror that answers, checked against the others --------------

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        found, index = await self._first(
            self._order(0),
            lambda i: self.mirrors[i].archive(ark, version),
            self.hedge_after,
            None,  # a manifest's size, so its time, is unknown beforehand: not a speed
        )
        others = [i for i in self._order(0) if i != index]
        await self._check_agreement(ark, found, index, others)
        return found

    async def _check_agreement(
        self, ark: str, found: Archive, index: int, others: list[int]
    ) -> None:
        """Raise BadReply if a mirror that answers within AGREE_TIME holds that version
        with other file hashes."""
        expected = file_hashes(found.manifest)
        disagree: list[str] = []

        async def check(i: int) -> None:
            try:
                theirs = await self.mirrors[i].archive(ark, found.version.version)
            except BackendError:
                return  # down, or not yet mirrored: nothing to compare
            if file_hashes(theirs.manifest) != expected:
                disagree.append(self.mirrors[i].name)

        with trio.move_on_after(AGREE_TIME):
            async with trio.open_nursery() as nursery:
                for i in others:
                    nursery.start_soon(check, i)
        if disagree:
            raise BadReply(
                f"mirrors disagree on the files of {ark} version {found.version.version}: "
                f"{self.mirrors[index].name} and {', '.join(disagree)}; see their logs"
            )

    async def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        found, _ = await self._first(
            self._order(0), lambda i: self.mirrors[i].record(ark), self.hedge_after
        )
        return found

    async def versions(self, ark: str) -> list[VersionInfo]:
        found, _ = await self._first(
            self._order(0), lambda i: self.mirrors[i].versions(ark), self.hedge_after
        )
        return found

    async def list_archives(self, prefix: str = "") -> list[str]:
        found, _ = await self._first(
            self._order(0), lambda i: self.mirrors[i].list_archives(prefix), self.hedge_after
        )
        return found

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        found, _ = await self._first(
            self._order(0), lambda i: self.mirrors[i].has_file(file_hash, size), self.hedge_after
        )
        return found

    # --- the CAS: rotated, spread, hedged ------------------------------------------------

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        self._turn += 1
        order = self._order(self._turn % len(self.mirrors))
        rec, index = await self._first(
            order, lambda i: self._reconstruction(i, file_hash, start, end, held), self.hedge_after
        )
        self._rebuilt.put(file_hash, index)
        return rec

    async def _reconstruction(
        self, index: int, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        """A mirror's reconstruction; its URLs and the range it covers are remembered."""
        rec = await self.mirrors[index].reconstruction(file_hash, start, end, held)
        self._remember(index, file_hash, start, end, rec)
        return rec

    def _remember(
        self, index: int, file_hash: bytes, start: int, end: int, rec: Reconstruction
    ) -> None:
        """Which mirror handed out rec's URLs, and a range of a file that names each xorb."""
        for xh, frs in rec.fetch.items():
            if frs:
                self._urls.put((index, xh), frs[0].url)
                self._ranges.put(xh, (file_hash, start, end))
            for fr in frs:
                self._owner.put(fr.url, index)

    async def reconstructions(
        self, file_hashes: Sequence[bytes], held: Collection[bytes] = ()
    ) -> dict[bytes, Reconstruction]:
        """Many files' whole reconstructions from one mirror, rotated and hedged as one
        file's are; {} only if no mirror answers batches (Batched)."""
        self._turn += 1
        order = self._order(self._turn % len(self.mirrors))
        try:
            recs, index = await self._first(
                order, lambda i: self._batch(i, file_hashes, held), self.hedge_after, None
            )
        except _NoBatch:
            return {}
        for file_hash in recs:
            self._rebuilt.put(file_hash, index)
        return recs

    async def _batch(
        self, index: int, file_hashes: Sequence[bytes], held: Collection[bytes]
    ) -> dict[bytes, Reconstruction]:
        """A mirror's reconstructions of many files, each remembered as one file's is;
        _NoBatch if it answers none of them (no batch route: another mirror may have one)."""
        mirror = self.mirrors[index]
        recs = (
            await mirror.reconstructions(file_hashes, held) if isinstance(mirror, Batched) else {}
        )
        if not recs:
            raise _NoBatch(f"{mirror.name} answered no batch of reconstructions")
        for file_hash, rec in recs.items():
            self._remember(index, file_hash, 0, rec.unpacked_length, rec)
        return recs

    async def _range_from(
        self, index: int, xorb_hash: bytes, fr: FetchRange, fresh: bool
    ) -> FetchRange:
        """fr as mirror index serves it: its own URL for that xorb (a new one if fresh)."""
        if self._owner.peek(fr.url) == index and not fresh:
            return fr
        url = None if fresh else self._urls.peek((index, xorb_hash))
        if url is None:
            where = self._ranges.peek(xorb_hash)
            if where is None:
                raise Refused(f"no reconstruction from {self.mirrors[index].name} names that xorb")
            await self._reconstruction(index, *where)
            url = self._urls.peek((index, xorb_hash))
            if url is None:
                raise BadReply(
                    f"{self.mirrors[index].name} gave no URL for xorb {hash_to_string(xorb_hash)}"
                )
        return FetchRange(url, fr.chunk_start, fr.chunk_end, fr.byte_start, fr.byte_end)

    async def _on_mirror(
        self,
        index: int,
        xorb_hash: bytes,
        fr: FetchRange,
        call: Callable[[Backend, FetchRange], Awaitable[T]],
    ) -> T:
        """call on mirror index with its range for fr; a URL of its that expired is
        replaced once (the caller's own URL is the caller's to renew)."""
        mirror = self.mirrors[index]
        for fresh in (False, True):
            found = await self._range_from(index, xorb_hash, fr, fresh)
            try:
                return await call(mirror, found)
            except Unauthorized:
                if fresh or found is fr:
                    raise
        raise AssertionError("unreachable")  # the loop returns or raises

    def _spread(self, xorb_hash: bytes) -> list[int]:
        """The mirrors for a xorb, starting at the one its hash picks."""
        return self._order(int.from_bytes(xorb_hash[:4], "little") % len(self.mirrors))

    async def fetch(self, xorb_hash: bytes, fr: FetchRange) -> bytes:
        async def one(index: int) -> bytes:
            data = await self._on_mirror(index, xorb_hash, fr, lambda m, r: m.fetch(xorb_hash, r))
            self._served.put(xorb_hash, index)
            return data

        units = max(1.0, (fr.byte_end + 1 - fr.byte_start) / WORK_UNIT)
        data, _ = await self._first(self._spread(xorb_hash), one, self.hedge_after, units)
        return data

    async def footer(self, xorb_hash: bytes, fr: FetchRange) -> XorbFooter:
        async def one(index: int) -> XorbFooter:
            return await self._on_mirror(index, xorb_hash, fr, lambda m, r: m.footer(xorb_hash, r))

        footer, _ = await self._first(self._spread(xorb_hash), one, self.hedge_after)
        return footer

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        found, _ = await self._first(
            self._order(0), lambda i: self.mirrors[i].query_dedup(chunk_hash), self.hedge_after
        )
        return found

    # --- writes go to one server, never to mirrors --------------------------------------

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        raise Refused(f"{self.name}: publish to one server; mirrors are read-only here")

    async def bind_again(self, ark: str, version: int, erc: Erc, message: str = "") -> VersionInfo:
        raise Refused(f"{self.name}: publish to one server; mirrors are read-only here")

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        raise Refused(f"{self.name}: publish to one server; mirrors are read-only here")

    async def upload_shard(self, data: bytes) -> bool:
        raise Refused(f"{self.name}: publish to one server; mirrors are read-only here")

    async def aclose(self) -> None:
        for mirror in self.mirrors:
            await mirror.aclose()
