"""ObjectLoader put together by hand, with a responder that stalls: sequential reads
claim blocks ahead, never more than PREFETCH_BLOCKS at once."""

from pathlib import Path
from typing import cast

import pytest
import trio
import trio.testing

from arkfs.mount import object_loader
from arkfs.mount.cache_writer import CacheWriter
from arkfs.mount.chunk_cache import ChunkCache
from arkfs.mount.jobs import Host, Limiters
from arkfs.mount.object_loader import ObjectLoader
from arkfs.mount.parts import Parts
from arkfs.mount.prefetch import Prefetcher
from arkfs.mount.stats import MountStats
from arkfs.resolve.objects import BLOCK, ObjectReader, RemoteObject

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

BIG = RemoteObject("ark:b1/x", "http://127.0.0.1:9/x", 40 * BLOCK, None, None, None)


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
