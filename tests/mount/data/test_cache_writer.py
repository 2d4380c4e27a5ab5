"""CacheWriter on its own: the backlog bound, an OSError logged once, drain waiting for
the writes in flight, small writes batched into one worker-thread call."""

import logging
import threading
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
import trio
import trio.testing

from arkfs.mount.data.cache_writer import BATCH_BYTES, CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.errors import ReadError
from arkfs.mount.data.jobs import Host
from arkfs.xet.compression import ChunkData
from arkfs.xet.hashing import chunk_hash
from tests.mount.data.test_chunk_cache import file_map

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


class HeldCache(ChunkCache):
    """A ChunkCache whose chunk writes wait until the test lets them go, or fail."""

    def __init__(self, root: Path, error: OSError | None = None) -> None:
        super().__init__(root, 1 << 30)
        self.go = threading.Event()
        self.error = error
        self.written: list[int] = []  # bytes of each pack written

    def put_chunks(self, chunks: Iterable[tuple[bytes, ChunkData]]) -> None:
        assert self.go.wait(30)
        if self.error is not None:
            raise self.error
        items = list(chunks)
        super().put_chunks(items)
        self.written.append(sum(len(c) for _, c in items))


def chunks(n: int, size: int, seed: int) -> dict[bytes, bytes]:
    out = {}
    for k in range(n):
        data = bytes([seed, k]) * (size // 2)
        out[chunk_hash(data)] = data
    return out


@asynccontextmanager
async def hosted(cache: ChunkCache, max_backlog: int) -> AsyncIterator[CacheWriter]:
    host = Host()
    writer = CacheWriter(cache, host, trio.CapacityLimiter(4), max_backlog)
    async with trio.open_nursery() as nursery:
        await nursery.start(host.run)
        yield writer
        host.close()
        await host.stop()


def test_chunks_beyond_the_backlog_are_not_written(tmp_path: Path) -> None:
    cache = HeldCache(tmp_path)

    async def main() -> None:
        async with hosted(cache, max_backlog=100_000) as writer:
            for seed in range(10):
                writer.write_chunks(chunks(3, 10_000, seed))
            await trio.testing.wait_all_tasks_blocked()
            assert writer.backlog == 90_000  # three groups of 30,000 bytes fit, no fourth
            cache.go.set()
            await writer.drain()
        assert writer.backlog == 0 and cache.written == [30_000] * 3
        assert len(cache) == 9

    trio.run(main)


def test_maps_and_footers_are_written_whatever_the_backlog(tmp_path: Path) -> None:
    cache = HeldCache(tmp_path)
    fmap = file_map()

    async def main() -> None:
        async with hosted(cache, max_backlog=10) as writer:
            writer.write_map(fmap)
            assert writer.backlog > 10
            await writer.drain()
            assert writer.backlog == 0
        assert cache.get_map(fmap.file_hash) is not None
        with pytest.raises(ReadError, match="closed"):
            writer.write_map(fmap)

    trio.run(main)


def test_an_oserror_is_logged_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    cache = HeldCache(tmp_path, OSError(28, "No space left on device"))
    cache.go.set()

    async def main() -> None:
        async with hosted(cache, max_backlog=1 << 20) as writer:
            for seed in range(3):
                writer.write_chunks(chunks(2, 1000, seed))
            await writer.drain()
            assert writer.backlog == 0

    with caplog.at_level(logging.WARNING, logger="arkfs.mount.data.cache_writer"):
        trio.run(main)
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot write the cache in {tmp_path}: [Errno 28] No space left on device"
    ]


def test_drain_waits_for_the_writes_in_flight(tmp_path: Path) -> None:
    cache = HeldCache(tmp_path)

    async def main() -> None:
        async with hosted(cache, max_backlog=1 << 20) as writer, trio.open_nursery() as nursery:
            writer.write_chunks(chunks(2, 1000, 1))
            await trio.testing.wait_all_tasks_blocked()
            drained = trio.Event()

            async def drain() -> None:
                await writer.drain()
                drained.set()

            nursery.start_soon(drain)
            await trio.testing.wait_all_tasks_blocked()
            assert not drained.is_set() and writer.backlog == 2000
            cache.go.set()
            await drained.wait()
            assert cache.written == [2000] and writer.backlog == 0

    trio.run(main)


def test_drain_gives_up_after_its_grace(tmp_path: Path) -> None:
    cache = HeldCache(tmp_path)

    async def main() -> None:
        async with hosted(cache, max_backlog=1 << 20) as writer:
            writer.write_chunks(chunks(2, 1000, 1))
            await trio.testing.wait_all_tasks_blocked()
            await writer.drain(grace=0.05)
            assert writer.backlog == 2000 and cache.written == []
            cache.go.set()

    trio.run(main)


class CountedCache(ChunkCache):
    """A ChunkCache that notes the thread of each write."""

    def __init__(self, root: Path) -> None:
        super().__init__(root, 1 << 30)
        self.threads: list[int] = []

    def put_chunks(self, chunks: Iterable[tuple[bytes, ChunkData]]) -> None:
        self.threads.append(threading.get_ident())
        super().put_chunks(chunks)


def test_small_writes_share_a_worker_thread_call(tmp_path: Path) -> None:
    cache = CountedCache(tmp_path)
    calls: list[object] = []

    async def main() -> None:
        async with hosted(cache, max_backlog=1 << 30) as writer:
            real = trio.to_thread.run_sync

            async def counted(fn: Any, *args: Any, **kwargs: Any) -> Any:
                calls.append(fn)
                return await real(fn, *args, **kwargs)

            with patch.object(trio.to_thread, "run_sync", counted):
                for seed in range(20):  # 20 packs of 2 KB: one batch
                    writer.write_chunks(chunks(2, 1000, seed))
                writer.write_map(file_map())
                await writer.drain()
                big = chunks(2, BATCH_BYTES // 2, 99)  # a full batch goes at once, alone
                writer.write_chunks(big)
                writer.write_chunks(chunks(2, 1000, 50))
                await writer.drain()
        assert len(calls) == 3
        assert len(cache.threads) == 22 and len(set(cache.threads[:20])) == 1
        assert len(cache) == 44 and cache.get_map(file_map().file_hash) is not None

    trio.run(main)


def test_chunks_of_a_read_finishing_while_the_reader_closes_are_still_written(
    tmp_path: Path,
) -> None:
    cache = ChunkCache(tmp_path, 1 << 30)

    async def main() -> None:
        host = Host()
        writer = CacheWriter(cache, host, trio.CapacityLimiter(4))
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            host.close()  # aclose(): close, drain, stop
            writer.write_chunks(chunks(2, 1000, 1))
            with pytest.raises(ReadError, match="closed"):
                writer.write_map(file_map())  # a new read's work is refused
            await writer.drain()
            await host.stop()
        with pytest.raises(ReadError, match="closed"):
            writer.write_chunks(chunks(2, 1000, 2))  # stopped: nothing runs writes now

    trio.run(main)
    assert len(cache) == 2


def test_a_write_that_fails_leaves_the_rest_of_its_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cache = ChunkCache(tmp_path, 1 << 30)
    broken = file_map()

    def put_map(fmap: Any) -> None:
        if fmap is broken:
            raise ValueError("a bug")
        ChunkCache.put_map(cache, fmap)

    cache.put_map = put_map  # type: ignore[method-assign]

    async def main() -> None:
        async with hosted(cache, max_backlog=1 << 20) as writer:
            writer.write_map(broken)
            writer.write_chunks(chunks(2, 1000, 1))
            await writer.drain()

    with caplog.at_level(logging.WARNING, logger="arkfs.mount.data.cache_writer"):
        trio.run(main)
    assert len(cache) == 2
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot write the cache in {tmp_path}: a bug"
    ]
