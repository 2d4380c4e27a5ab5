"""ChunkLoader and MapLoader put together by hand, with no ContentReader: claims join the
loads in flight, and prefetch claims only as many groups as may run."""

import random
from pathlib import Path

import pytest
import trio

from arkfs.mount.data.backend_calls import FetchUrls
from arkfs.mount.data.cache_writer import CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.chunk_loader import PREFETCH_GROUPS, ChunkLoader
from arkfs.mount.data.jobs import Host, Limiters
from arkfs.mount.data.map_loader import MapLoader
from arkfs.mount.data.parts import Parts
from arkfs.mount.stats import MountStats
from arkfs.xet.compression import ChunkData
from tests.mount.data.fake_backend import FETCH, FakeBackend

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_prefetch_claims_only_the_groups_it_can_start(tmp_path: Path) -> None:
    fake = FakeBackend({"f": random.Random(1).randbytes(3_000_000)}, max_chunks=2)
    f = fake.files["f"]

    async def main() -> None:
        cache, stats, host = ChunkCache(tmp_path, 1 << 30), MountStats(), Host()
        limiters, urls = Limiters(16), FetchUrls()
        writer = CacheWriter(cache, host, limiters.writes)
        parts = Parts(cache, stats, host, limiters, writer)
        maps, chunks = MapLoader(parts, urls), ChunkLoader(parts, urls)
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            fmap = await maps.load(fake, f.hash, f.size)
            assert maps.find(f.hash, f.size) is fmap
            stalls = [fake.stall(FETCH) for _ in range(PREFETCH_GROUPS)]
            end = chunks.prefetch(fake, fmap, 0, f.size)
            # A group is a run of one xorb (two chunks here): the claim stops at the start
            # of the first run it could not start a group for.
            run_starts = [i for i in range(1, len(fmap)) if not fmap.follows(i - 1, i)]
            assert end == fmap.start(run_starts[PREFETCH_GROUPS - 1])
            assert chunks.prefetching == PREFETCH_GROUPS
            assert chunks.prefetch(fake, fmap, end, f.size) == end  # no room: nothing queued
            for stall in stalls:
                await stall.reached.wait()
            # A read of claimed chunks joins their groups; one of unclaimed ones starts its own.
            later = run_starts[PREFETCH_GROUPS - 1]
            joined = chunks.claim(fake, fmap, range(later))
            assert len(joined) == PREFETCH_GROUPS and chunks.prefetching == PREFETCH_GROUPS
            (own,) = chunks.claim(fake, fmap, [later])
            assert own not in joined
            for stall in stalls:
                stall.release()
            got: dict[bytes, ChunkData] = {}
            for p in [*joined, own]:
                got |= await p.wait()
            assert got[fmap.chunk_hash(later)] == f.data[fmap.start(later) : fmap.ends[later]]
            assert fake.calls[FETCH] == PREFETCH_GROUPS + 1
            assert chunks.prefetching == 0 and chunks.inflight == 0
            host.close()
            await host.stop()

    trio.run(main)


def test_a_read_brings_along_the_wanted_chunks_after_its_own_unless_its_own_are_on_disk(
    tmp_path: Path,
) -> None:
    rng = random.Random(2)
    fake = FakeBackend({n: rng.randbytes(1000 + i) for i, n in enumerate("abcd")})
    a, b, c, d = (fake.files[n] for n in "abcd")  # one chunk each, in one xorb, in order

    async def main() -> None:
        cache, stats, host = ChunkCache(tmp_path, 1 << 30), MountStats(), Host()
        limiters, urls = Limiters(16), FetchUrls()
        writer = CacheWriter(cache, host, limiters.writes)
        parts = Parts(cache, stats, host, limiters, writer)
        maps = MapLoader(parts, urls)
        chunks = ChunkLoader(parts, urls, footers=maps.footer)
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            fa, fb, fc, fd = [await maps.load(fake, f.hash, f.size) for f in (a, b, c, d)]
            fetches = fake.calls[FETCH]
            chunks.want(t for f in (b, c) for t in fake._terms[f.hash])  # not d
            (own,) = chunks.claim(fake, fa, [0])
            assert chunks.claim(fake, fb, [0]) == [own] == chunks.claim(fake, fc, [0])
            got = await own.wait()
            assert got[fc.chunk_hash(0)] == c.data and got[fb.chunk_hash(0)] == b.data
            assert fd.chunk_hash(0) not in got and fake.calls[FETCH] == fetches + 1
            # c and d are wanted by a new loader, but b is on disk: its load brings nothing
            cache.put_chunks([(fb.chunk_hash(0), b.data)])
            later = ChunkLoader(parts, urls, footers=maps.footer)
            later.want(t for f in (c, d) for t in fake._terms[f.hash])
            (own,) = later.claim(fake, fb, [0])
            assert later.claim(fake, fc, [0]) != [own]
            host.close()
            await host.stop()

    trio.run(main)
