"""ObjectLoader put together by hand, with a responder that stalls: sequential reads
claim blocks ahead, never more than PREFETCH_BLOCKS at once."""

import hashlib
from pathlib import Path
from typing import cast

import pytest
import trio
import trio.testing

from arkfs.mount.data import object_loader
from arkfs.mount.data.cache_writer import CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.errors import ReadError
from arkfs.mount.data.jobs import Host, Limiters
from arkfs.mount.data.object_loader import ObjectLoader
from arkfs.mount.data.parts import Parts
from arkfs.mount.data.prefetch import Prefetcher
from arkfs.mount.stats import MountStats
from arkfs.resolver import objects
from arkfs.resolver.objects import BLOCK, ObjectReader, RemoteObject

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

BIG = RemoteObject("ark:b1/x", "http://127.0.0.1:9/x", 40 * BLOCK, '"e1"', None, None)


class Stalling:
    """Answers block 0 at once; every other block only once released."""

    def __init__(self) -> None:
        self.waiting = 0
        self.peak = 0
        self.release = trio.Event()

    async def fetch_block(self, obj: RemoteObject, index: int) -> bytes:
        if index:
            self.waiting += 1
            self.peak = max(self.peak, self.waiting)
            await self.release.wait()
            self.waiting -= 1
        start, end = obj.block_span(index)
        return bytes(end - start)


def test_prefetch_keeps_at_most_prefetch_blocks_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(object_loader, "PREFETCH_BLOCKS", 3)

    async def main() -> None:
        cache, stats, host, limiters = (
            ChunkCache(tmp_path, 1 << 30),
            MountStats(),
            Host(),
            Limiters(4),
        )
        parts = Parts(cache, stats, host, limiters, CacheWriter(cache, host, limiters.writes))
        loader, source = ObjectLoader(parts, Prefetcher()), Stalling()
        reader = cast(ObjectReader, source)
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            for offset in range(0, 40 * 4096, 4096):  # each sequential read grows the window
                assert await loader.read(reader, BIG, offset, offset + 4096, "s") == bytes(4096)
            await trio.testing.wait_all_tasks_blocked()
            assert source.peak == 3  # the window asked for 8 blocks
            assert stats.object_prefetches == 3
            source.release.set()
            data = await loader.read(reader, BIG, BLOCK, BLOCK + 4096, "s")
            assert data == bytes(4096)
            assert stats.object_fetches == 4  # block 0, then the three claimed ahead
            nursery.cancel_scope.cancel()

    trio.run(main)


class Flipping:
    """Serves block 1 with a flipped byte; its second fetch waits until released."""

    def __init__(self) -> None:
        self.fetches: dict[int, int] = {}
        self.release = trio.Event()

    @staticmethod
    def truth(index: int) -> bytes:
        return bytes([index + 1]) * BLOCK

    async def fetch_block(self, obj: RemoteObject, index: int) -> bytes:
        self.fetches[index] = self.fetches.get(index, 0) + 1
        if index != 1:
            return self.truth(index)
        if self.fetches[index] == 2:
            await self.release.wait()
        return b"\xff" + self.truth(1)[1:]


def test_a_block_in_flight_when_the_digest_fails_is_never_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(object_loader, "MEMORY", BLOCK)  # one block: the others are fetched again
    monkeypatch.setattr(objects, "WHOLE_MAX", BLOCK)  # too big to be checked before it is read
    digest = hashlib.sha256(b"".join(Flipping.truth(i) for i in range(3))).digest()
    obj = RemoteObject("ark:b1/y", "http://127.0.0.1:9/y", 3 * BLOCK, '"e1"', digest, None)

    async def main() -> None:
        cache, host, limiters = ChunkCache(tmp_path, 1 << 30), Host(), Limiters(4)
        writer = CacheWriter(cache, host, limiters.writes, max_backlog=0)  # nothing written yet
        loader = ObjectLoader(Parts(cache, MountStats(), host, limiters, writer), Prefetcher())
        source = Flipping()
        reader = cast(ObjectReader, source)

        async def read(index: int, stream: str) -> bytes:
            at = index * BLOCK + 100
            return await loader.read(reader, obj, at, at + 10, stream)

        async def read_in_flight() -> None:
            with pytest.raises(ReadError):
                await read(1, "d")

        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            await read(0, "a")
            await read(1, "b")  # the flipped byte, fed to the digest
            await read(0, "c")  # block 1 leaves memory
            writer.max_backlog = 1 << 30
            nursery.start_soon(read_in_flight)  # block 1 again: in flight
            await trio.testing.wait_all_tasks_blocked()
            with pytest.raises(ReadError, match="do not match its SHA-256 digest"):
                await read(2, "e")
            source.release.set()
            await trio.testing.wait_all_tasks_blocked()
            await writer.drain()
            assert source.fetches[1] == 2
            assert not cache.has_block(obj.block_id(1))
            assert obj.block_id(1) not in loader.memory
            nursery.cancel_scope.cancel()

    trio.run(main)
