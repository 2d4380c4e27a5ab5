"""Plain HTTP objects (arkfs.resolver.objects) for the mount: their blocks from memory, the
disk cache, else their responder; claimed ahead of sequential reads; and a big object's
SHA-256 digest checked over its blocks in order.

- Memory: an LRU of blocks (MEMORY bytes) by block id; a block is loaded once however
  many reads wait for it.
- Disk: the ChunkCache's blocks, for objects whose blocks are tied to one version
  (RemoteObject.on_disk); written behind the read by the CacheWriter, within its backlog.
  An object without a strong ETag (or, if it is one block, a digest) stays in memory.
- Prefetch: the reader's Prefetcher, the one rule for every file, says which bytes to
  claim ahead of a stream; the blocks covering them are loaded in the background,
  PREFETCH_BLOCKS at most at once over every object.
- Digest: a big object with a digest (past WHOLE_MAX: smaller ones are read whole) has a
  running SHA-256, fed each block in order, from
  block 0, as reads find it (from the network or the disk). The read that completes it
  waits for the verdict; a mismatch fails that read and every later read of that version
  of the object (ReadError), and drops its blocks from memory and disk. A one-block
  object is checked whole when fetched (arkfs.resolver.objects). A block that lands after
  its version failed the digest (a prefetch in flight) is neither kept nor written.
- Once: an object read whole without a digest has nothing else to prove two fetches of
  it are one representation, so each stream (open file) is pinned to the BLAKE3 of the
  first it read, and another fails its reads (the record changes on the next open).
"""

import hashlib
from collections.abc import Hashable
from contextlib import AbstractAsyncContextManager, nullcontext

import blake3
import trio

from arkfs.backend.base import BackendError
from arkfs.mount.data.errors import ReadError, StaleObject
from arkfs.mount.data.jobs import Pending
from arkfs.mount.data.parts import Parts
from arkfs.mount.data.prefetch import Prefetcher
from arkfs.resolver.objects import ObjectChanged, ObjectReader, RemoteObject, wrong_digest
from arkfs.util.lru import LRU

MIB = 1024 * 1024
MEMORY = 64 * MIB  # bytes of object blocks kept in memory
CHECKS = 256  # objects whose running digest is kept
PREFETCH_BLOCKS = 8  # blocks loaded ahead of readers at once, over every object
DROP_GRACE = 5.0  # seconds a failed digest waits for cache writes before dropping blocks
PINS = 4096  # (stream, block) pairs whose whole-object fingerprint is remembered


class _Check:
    """The running SHA-256 of one version of an object: blocks [0, next) fed so far."""

    __slots__ = ("failed", "hasher", "lock", "next", "verified")

    def __init__(self) -> None:
        self.next = 0
        self.hasher = hashlib.sha256()
        self.lock = trio.Lock()
        self.verified = False
        self.failed = False


class ObjectLoader:
    """Reads byte ranges of RemoteObjects (see the module docstring)."""

    def __init__(
        self,
        parts: Parts,
        prefetcher: Prefetcher,
    ) -> None:
        self._parts = parts
        self._prefetcher = prefetcher
        self.memory: LRU[bytes, bytes] = LRU(MEMORY)
        self._inflight: dict[bytes, Pending[bytes]] = {}
        self._prefetching = 0  # prefetch loads under way
        self._checks: LRU[RemoteObject, _Check] = LRU(CHECKS)
        self._prints: LRU[bytes, bytes] = LRU(PINS)  # block id -> BLAKE3 of the one in memory
        self._pins: LRU[tuple[Hashable, bytes], bytes] = LRU(PINS)  # (stream, id) -> BLAKE3

    async def read(
        self, source: ObjectReader, obj: RemoteObject, offset: int, end: int, stream: Hashable
    ) -> bytes:
        """Bytes [offset, end) of obj, within its size. Raises ReadError."""
        if self._failed(obj):
            raise ReadError(wrong_digest(obj))
        first, last = obj.block_of(offset), obj.block_of(end - 1)
        blocks: dict[int, bytes] = {}
        waits: dict[int, Pending[bytes]] = {}
        for i in range(first, last + 1):
            data = self.memory.get(obj.block_id(i))
            if data is None:
                waits[i] = self._claim(source, obj, i, prefetch=False)
            else:
                blocks[i] = data
        if obj.blocks > 1:
            self._prefetch(source, obj, stream, offset, end)
        for i, pending in waits.items():
            blocks[i] = await pending.wait()
        if obj.sha256 is not None and obj.blocks > 1:
            await self._verify(obj, blocks)
        if obj.whole and obj.sha256 is None:
            self._pin(obj, stream)
        start = obj.block_span(first)[0]
        joined = b"".join(blocks[i] for i in range(first, last + 1))
        return joined[offset - start : end - start]

    def _claim(
        self, source: ObjectReader, obj: RemoteObject, index: int, prefetch: bool
    ) -> Pending[bytes]:
        """The load of a block under way, or a new one started in the background."""
        block_id = obj.block_id(index)
        pending = self._inflight.get(block_id)
        if pending is None:
            pending = Pending()
            self._parts.host.nursery().start_soon(
                self._settle, pending, source, obj, index, prefetch
            )
            self._inflight[block_id] = pending
            self._prefetching += prefetch  # until _settle ends
        return pending

    async def _settle(
        self,
        pending: Pending[bytes],
        source: ObjectReader,
        obj: RemoteObject,
        index: int,
        prefetch: bool,
    ) -> None:
        block_id = obj.block_id(index)
        try:
            await pending.settle(
                f"loading block {index} of {obj.ark}",
                lambda: self._load(source, obj, index, prefetch),
            )
        finally:
            self._prefetching -= prefetch
            if self._inflight.get(block_id) is pending:
                del self._inflight[block_id]

    async def _load(
        self, source: ObjectReader, obj: RemoteObject, index: int, prefetch: bool
    ) -> bytes:
        """Block index of obj from the disk cache, else its responder; kept in memory."""
        block_id = obj.block_id(index)
        data = None
        if obj.on_disk and self._parts.cache.has_block(block_id):
            disk = self._parts.limiters.background if prefetch else self._parts.limiters.disk
            data = await trio.to_thread.run_sync(
                self._parts.cache.get_block, block_id, limiter=disk
            )
            if data is not None:
                self._parts.stats.object_disk_hits += 1
        if data is None:
            limiter: AbstractAsyncContextManager[object] = (
                nullcontext() if prefetch else self._parts.limiters.fetch
            )
            try:
                async with limiter:
                    data = await source.fetch_block(obj, index)
            except ObjectChanged as exc:
                raise StaleObject(str(exc)) from None
            except BackendError as exc:
                raise ReadError(str(exc)) from None
            self._parts.stats.object_fetches += 1
            if self._failed(obj):  # its version failed the digest while this was in flight
                raise ReadError(wrong_digest(obj))
            if obj.on_disk:
                self._parts.writer.write_block(block_id, data)
            if obj.whole and obj.sha256 is None:
                print_ = await trio.to_thread.run_sync(
                    lambda: blake3.blake3(data).digest(), limiter=self._parts.limiters.cpu
                )
                self._prints.put(block_id, print_, 1)
        if prefetch:
            self._parts.stats.prefetched_bytes += len(data)
        self.memory.put(block_id, data, len(data))
        return data

    def _failed(self, obj: RemoteObject) -> bool:
        """Did this version of obj fail its digest?"""
        check = self._checks.peek(obj)
        return check is not None and check.failed

    def _pin(self, obj: RemoteObject, stream: Hashable) -> None:
        """Tie stream to the representation of obj it read first (see Once above);
        ReadError if the one in memory now is another."""
        block_id = obj.block_id(0)
        now = self._prints.get(block_id)
        if now is None:
            return  # from the disk cache: checked against its digest or strong ETag
        pinned = self._pins.get((stream, block_id))
        if pinned is None:
            self._pins.put((stream, block_id), now, 1)
        elif pinned != now:
            raise StaleObject(f"{obj.ark} changed at its responder while it was read; open again")

    def _prefetch(
        self, source: ObjectReader, obj: RemoteObject, stream: Hashable, offset: int, end: int
    ) -> None:
        """Tell the prefetch policy of a read; claim in the background what it asks for."""
        window = self._prefetcher.on_read(stream, offset, end, obj.size)
        if window is None:
            return
        first, last = obj.block_of(window[0]), obj.block_of(window[1] - 1)
        stop = window[0]
        for i in range(first, last + 1):
            block_id = obj.block_id(i)
            if block_id not in self.memory and block_id not in self._inflight:
                if self._prefetching >= PREFETCH_BLOCKS:
                    break  # claimed up to here; the next read asks again
                self._claim(source, obj, i, prefetch=True)
                self._parts.stats.object_prefetches += 1
            stop = obj.block_span(i)[1]
        self._prefetcher.claimed(stream, stop)

    async def _verify(self, obj: RemoteObject, blocks: dict[int, bytes]) -> None:
        """Feed obj's running digest the blocks that come next in order (those of this
        read, then those in memory); at the last one, compare. ReadError on a mismatch."""
        check = self._checks.get(obj)
        if check is None:
            if 0 not in blocks:
                return  # a digest is computed from the first byte on
            check = _Check()
            self._checks.put(obj, check)
        if check.verified:
            return
        async with check.lock:
            while not check.failed and check.next < obj.blocks:
                data = blocks.get(check.next) or self.memory.peek(obj.block_id(check.next))
                if data is None:
                    return  # not read yet: fed when a read brings it
                await trio.to_thread.run_sync(
                    check.hasher.update, data, limiter=self._parts.limiters.cpu
                )
                check.next += 1
                if check.next == obj.blocks:
                    check.verified = check.hasher.digest() == obj.sha256
                    check.failed = not check.verified
                    if check.failed:
                        await self._drop(obj)
            if check.failed:
                raise ReadError(wrong_digest(obj))

    async def _drop(self, obj: RemoteObject) -> None:
        """Forget every block of obj, in memory and on disk (after the writes under way,
        DROP_GRACE at most, so none lands after the drop)."""
        ids = [obj.block_id(i) for i in range(obj.blocks)]
        for block_id in ids:
            self.memory.pop(block_id)
        if obj.on_disk:
            await self._parts.writer.drain(DROP_GRACE)
            await trio.to_thread.run_sync(
                self._parts.cache.drop_blocks, ids, limiter=self._parts.limiters.writes
            )
