"""The data path against an in-memory backend (fake_backend.py): deduplicated fetches, URL
refresh, wrong bytes, stalls, prefetch, failures that are not remembered. No server, no
FUSE."""

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import cast

import pytest
import trio
import trio.testing

from arkfs.backend.base import BackendError, BadReply, Unauthorized, Unreachable
from arkfs.mount.data.backend_calls import BACKEND_TIMEOUT
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.errors import ReadError
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.stats import MountStats
from tests.mount.data.fake_backend import FETCH, FOOTER, RECONSTRUCTION, FakeBackend, FakeFile, Flip

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

MIB = 1024 * 1024


@pytest.fixture(scope="module")
def files() -> dict[str, bytes]:
    """A 4 MiB file of random and compressible megabytes, another file, and a small one."""
    rng = random.Random(10)
    low = bytes(b & 0x0F for b in range(256))
    big = b"".join(
        rng.randbytes(MIB).translate(low) if n % 2 else rng.randbytes(MIB) for n in range(4)
    )
    return {"big": big, "other": rng.randbytes(1_500_000), "small": rng.randbytes(5000)}


@asynccontextmanager
async def running(cache: Path, **options: int) -> AsyncIterator[ContentReader]:
    """A ContentReader with its disk cache in cache, hosted until the block ends."""
    reader = ContentReader(ChunkCache(cache, 1 << 30), MountStats(), **options)
    async with trio.open_nursery() as nursery:
        await nursery.start(reader.run)
        try:
            yield reader
        finally:
            await reader.aclose()


async def read(reader: ContentReader, fake: FakeBackend, f: FakeFile, start: int, n: int) -> bytes:
    """Bytes [start, start + n) of f through reader, checked against the original; a
    stream of its own, so it claims nothing ahead."""
    got = await reader.read(fake, f.hash, f.size, start, n, stream=(f.hash, start))
    assert got == f.data[start : start + n]
    return got


def test_random_reads_return_the_files_bytes(tmp_path: Path, files: dict[str, bytes]) -> None:
    fake = FakeBackend(files)

    async def main() -> None:
        rng = random.Random(3)
        async with running(tmp_path, memory_bytes=MIB) as reader:
            for _ in range(200):
                f = rng.choice(list(fake.files.values()))
                offset, length = rng.randrange(f.size + 10), rng.choice([1, 4096, 200_000, MIB])
                got = await reader.read(fake, f.hash, f.size, offset, length)
                assert got == f.data[offset : offset + length]
            assert reader.stats.errors == 0 and reader.stats.disk_hits > 0

    trio.run(main)


def test_concurrent_reads_of_the_same_chunks_fetch_once(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    fake = FakeBackend(files)
    f = fake.files["big"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            stall = fake.stall(FETCH)
            results: list[bytes] = []

            async def one() -> None:
                results.append(await reader.read(fake, f.hash, f.size, 0, 4096))

            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(one)
                await stall.reached.wait()
                await trio.testing.wait_all_tasks_blocked()
                assert not results  # all eight wait for the one fetch
                stall.release()
            assert results == [f.data[:4096]] * 8
            # One map (one reconstruction, each footer once), one fetch of the first chunk.
            assert fake.calls[RECONSTRUCTION] == 1 and fake.calls[FETCH] == 1
            assert fake.calls[FOOTER] == reader.stats.footer_fetches > 0
            assert reader.stats.maps_loaded == 1

    trio.run(main)


def test_an_expired_url_is_refreshed_once_then_read(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    fake = FakeBackend(files)
    f = fake.files["big"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            await read(reader, fake, f, 0, 4096)  # the map, and the URLs of every xorb
            assert reader.stats.url_refreshes == 0
            fake.expire_urls()
            await read(reader, fake, f, 2 * MIB, 1)  # one byte: one chunk, one xorb
            assert reader.stats.url_refreshes == 1
            assert fake.calls[FETCH] == 3 and fake.calls[RECONSTRUCTION] == 2
            # Refused again after the refresh: a ReadError, and the next read works.
            fake.inject(FETCH, Unauthorized("expired"), Unauthorized("expired"))
            with pytest.raises(ReadError, match="expired"):
                await read(reader, fake, f, 3 * MIB, 1)
            assert reader.stats.url_refreshes == 2
            await read(reader, fake, f, 3 * MIB, 1)

    trio.run(main)


def test_wrong_bytes_are_never_served(tmp_path: Path, files: dict[str, bytes]) -> None:
    fake = FakeBackend(files)
    f = fake.files["big"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            fake.inject(FOOTER, Flip())  # one chunk hash wrong: the file hash does not match
            with pytest.raises(ReadError, match="fails verification"):
                await read(reader, fake, f, 0, 4096)
            await read(reader, fake, f, 0, 4096)  # footers fetched again, the map built
            fake.inject(FETCH, Flip(), Flip())  # one byte wrong, fetched once more: wrong again
            with pytest.raises(ReadError, match="fails verification"):
                await read(reader, fake, f, MIB, 100_000)
            await read(reader, fake, f, MIB, 100_000)
            assert reader.stats.errors == 2
            assert fake.calls[FOOTER] == 2 * len(f.xorbs)  # the wrong footer was not kept

    trio.run(main)
    # Only verified chunks reached the disk cache: a new reader serves them with no backend.
    fake.inject(RECONSTRUCTION, *[Unreachable("gone")] * 10)

    async def again() -> None:
        async with running(tmp_path) as reader:
            await read(reader, fake, f, MIB, 100_000)
            assert reader.stats.maps_from_disk == 1 and reader.stats.fetches == 0

    trio.run(again)


def test_bytes_that_fail_their_check_are_fetched_once_more(
    tmp_path: Path, files: dict[str, bytes], caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeBackend(files)
    f = fake.files["other"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            await read(reader, fake, f, 0, 1)  # the map, so only data fetches follow
            fetches, refreshes = fake.calls[FETCH], reader.stats.url_refreshes
            fake.inject(FETCH, Flip())  # a bit flipped in transit, once
            await read(reader, fake, f, 700_000, 70_000)
            assert fake.calls[FETCH] == fetches + 2  # the bad reply and a good one
            assert reader.stats.url_refreshes == refreshes + 1  # asked with a fresh URL
            assert reader.stats.errors == 0

    trio.run(main)
    warnings = [r for r in caplog.records if "fetching it again" in r.getMessage()]
    assert len(warnings) == 1 and "fails verification" in warnings[0].getMessage()


def test_a_stalled_fetch_blocks_only_its_own_waiters(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    fake = FakeBackend(files)
    big, other = fake.files["big"], fake.files["other"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            await read(reader, fake, big, 0, 10)  # the map of big
            stall = fake.stall(FETCH)
            done: list[str] = []

            async def waiter(name: str) -> None:
                await read(reader, fake, big, 2 * MIB, 4096)
                done.append(name)

            async with trio.open_nursery() as nursery:
                nursery.start_soon(waiter, "first")
                await stall.reached.wait()
                nursery.start_soon(waiter, "joined")
                await read(reader, fake, big, 3 * MIB, 4096)  # other chunks of the same file
                await read(reader, fake, other, 0, 300_000)  # another file, its map too
                await trio.testing.wait_all_tasks_blocked()
                assert done == [] and cast(int, reader.stats.to_json()["inflight_chunks"]) >= 1
                stall.release()
            assert sorted(done) == ["first", "joined"]
            assert reader.stats.errors == 0

    trio.run(main)


def test_a_backend_call_that_never_returns_fails_after_the_backstop(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    fake = FakeBackend(files)
    f = fake.files["big"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            await read(reader, fake, f, 0, 10)
            stall = fake.stall(FETCH)  # never released
            with pytest.raises(
                ReadError, match=f"no answer from the backend in {BACKEND_TIMEOUT:.0f} s"
            ):
                await read(reader, fake, f, 2 * MIB, 4096)
            assert stall.reached.is_set()
            await read(reader, fake, f, 2 * MIB, 4096)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


def test_sequential_reads_claim_ahead_and_random_reads_do_not(
    tmp_path: Path, files: dict[str, bytes]
) -> None:
    fake = FakeBackend(files)
    f = fake.files["big"]

    async def main() -> None:
        async with running(tmp_path / "random") as reader:
            for offset in (3 * MIB, 10, 2 * MIB, 40_000):
                await reader.read(fake, f.hash, f.size, offset, 4096)
            assert reader.stats.prefetched_bytes == 0
        async with running(tmp_path / "sequential") as reader:
            step = 128 * 1024
            for offset in range(0, 2 * MIB, step):
                assert (
                    await reader.read(fake, f.hash, f.size, offset, step)
                    == f.data[offset : offset + step]
                )
            stats = reader.stats
            assert stats.prefetched_bytes > 0 and stats.memory_hits > stats.reads // 2
            with trio.fail_after(30):
                while stats.to_json()["prefetch_groups"]:
                    await trio.sleep(0.01)
            # The next bytes were claimed ahead of the reader: in memory, no fetch now.
            fetches, hits = fake.calls[FETCH], stats.memory_hits
            await read(reader, fake, f, 2 * MIB, step)
            assert fake.calls[FETCH] == fetches and stats.memory_hits > hits

    trio.run(main)


@pytest.mark.parametrize(
    ("operation", "error", "times"),
    [
        (RECONSTRUCTION, Unreachable("connection refused"), 1),
        (FOOTER, BadReply("malformed footer"), 1),
        (FETCH, Unreachable("timed out"), 1),
        (FETCH, BadReply("short body"), 2),  # a bad reply is fetched once more first
    ],
)
def test_a_failure_is_not_remembered(
    tmp_path: Path, files: dict[str, bytes], operation: str, error: BackendError, times: int
) -> None:
    fake = FakeBackend(files)
    f = fake.files["other"]

    async def main() -> None:
        async with running(tmp_path) as reader:
            fake.inject(operation, *[error] * times)  # 1000 bytes: one chunk, one fetch
            with pytest.raises(ReadError, match=str(error)):
                await read(reader, fake, f, 500_000, 1000)
            await read(reader, fake, f, 500_000, 1000)
            assert reader.stats.errors == 1

    trio.run(main)
