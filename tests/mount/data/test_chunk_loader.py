"""ChunkLoader and MapLoader put together by hand, with no ContentReader: claims join the
loads in flight, prefetch claims only as many groups as may run, a batch's footers are
checked once for all its files, and a preload reads the maps on disk many to a thread
call."""

import itertools
import random
import threading
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from arkfs.mount.data import chunk_loader, map_loader
from arkfs.mount.data.backend_calls import FetchUrls
from arkfs.mount.data.cache_writer import CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.chunk_loader import PREFETCH_GROUPS, ChunkLoader
from arkfs.mount.data.file_map import FileMap
from arkfs.mount.data.jobs import Host, Limiters
from arkfs.mount.data.map_loader import MapLoader
from arkfs.mount.data.parts import Parts
from arkfs.mount.stats import MountStats
from arkfs.xet.compression import ChunkData
from arkfs.xet.errors import XetError
from arkfs.xet.reconstruction import BATCH_FILES, Reconstruction
from arkfs.xet.trust import recorded_footer
from arkfs.xet.xorb import XorbFooter, footer_record
from tests.mount.data.fake_backend import FETCH, RECONSTRUCTION, FakeBackend

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def parts_in(tmp_path: Path) -> Parts:
    """The loaders' shared parts, with a chunk cache under tmp_path (call in trio)."""
    cache, host, limiters = ChunkCache(tmp_path, 1 << 30), Host(), Limiters(16)
    return Parts(cache, MountStats(), host, limiters, CacheWriter(cache, host, limiters.writes))


def test_prefetch_claims_only_the_groups_it_can_start(tmp_path: Path) -> None:
    fake = FakeBackend({"f": random.Random(1).randbytes(3_000_000)}, max_chunks=2)
    f = fake.files["f"]

    async def main() -> None:
        parts, urls = parts_in(tmp_path), FetchUrls()
        host = parts.host
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
        parts, urls = parts_in(tmp_path), FetchUrls()
        cache, host = parts.cache, parts.host
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


def test_past_its_bound_want_lets_go_of_the_oldest_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Files a reader was to read and did not (an interrupted cp) must not stop the
    read-ahead of the files wanted next."""
    monkeypatch.setattr(chunk_loader, "WANTED_CHUNKS", 2)
    rng = random.Random(3)
    fake = FakeBackend({n: rng.randbytes(1000 + i) for i, n in enumerate("abcd")})
    a, b, c, d = (fake.files[n] for n in "abcd")  # one chunk each, in one xorb, in order

    async def main() -> None:
        parts, urls = parts_in(tmp_path), FetchUrls()
        maps = MapLoader(parts, urls)
        chunks = ChunkLoader(parts, urls, footers=maps.footer)
        async with trio.open_nursery() as nursery:
            await nursery.start(parts.host.run)
            fb, fc, fd = [await maps.load(fake, f.hash, f.size) for f in (b, c, d)]
            chunks.want(fake._terms[a.hash])  # never read
            chunks.want(t for f in (c, d) for t in fake._terms[f.hash])
            (own,) = chunks.claim(fake, fb, [0])
            got = await own.wait()
            assert got[fc.chunk_hash(0)] == c.data and got[fd.chunk_hash(0)] == d.data
            parts.host.close()
            await parts.host.stop()

    trio.run(main)


class BatchedFake(FakeBackend):
    """A FakeBackend that answers many files' reconstructions at once, with the footers of
    their xorbs, as `arkfs serve`'s batch route does; flip: the xorb whose footer it damages."""

    def __init__(self, files: dict[str, bytes], flip: bytes | None = None) -> None:
        super().__init__(files)
        self.flip = flip
        self.batches = 0

    async def reconstructions(
        self, file_hashes: Sequence[bytes], held: Collection[bytes] = ()
    ) -> dict[bytes, Reconstruction]:
        self.batches += 1
        self.calls[RECONSTRUCTION] -= len(file_hashes)  # counted as batches, not files
        recs = {}
        for fh in file_hashes:
            rec = await self.reconstruction(fh, 0, 1 << 40)
            records = {xh: footer_record(self.xorbs[xh].footer) for xh in rec.fetch}
            if self.flip in records:
                record = records[self.flip]
                records[self.flip] = record[:-40] + bytes([record[-40] ^ 1]) + record[-39:]
                with pytest.raises(XetError):  # damaged where its hashes tell
                    recorded_footer(records[self.flip], self.flip)
            recs[fh] = replace(rec, footers=records)
        return recs


@pytest.mark.parametrize("flip", [False, True])
def test_a_batchs_footers_are_checked_once_for_all_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, flip: bool
) -> None:
    rng = random.Random(3)
    files = {f"f{i}": rng.randbytes(500 + i) for i in range(12)}  # one chunk each: two xorbs
    fake = BatchedFake(files)
    xorbs = list(dict.fromkeys(x for f in fake.files.values() for x in f.xorbs))
    fake.flip = xorbs[0] if flip else None
    checked: list[bytes] = []
    per_file: list[bytes] = []  # footers a file's own map parsed (its batch's failed)

    def counted(record: bytes, xorb_hash: bytes) -> XorbFooter:
        checked.append(xorb_hash)
        return recorded_footer(record, xorb_hash)

    def sent(rec: Reconstruction, xorbs: list[bytes]) -> dict[bytes, XorbFooter]:
        per_file.extend(xorbs)
        return parse_sent(rec, xorbs)

    parse_sent = map_loader._sent_footers

    monkeypatch.setattr(map_loader, "recorded_footer", counted)
    monkeypatch.setattr(map_loader, "_sent_footers", sent)

    async def main() -> None:
        parts, urls = parts_in(tmp_path), FetchUrls()
        host = parts.host
        maps = MapLoader(parts, urls)
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            maps.preload(fake, [(f.hash, f.size) for f in fake.files.values()], lambda t: None)
            for f in fake.files.values():
                fmap = maps.find(f.hash, f.size) or await maps.load(fake, f.hash, f.size)
                assert (fmap.file_hash, fmap.size) == (f.hash, f.size)
            host.close()
            await host.stop()

    trio.run(main)
    assert fake.batches == 1 and sorted(checked) == sorted(xorbs)  # once each, not per file
    in_first = sum(xorbs[0] in f.xorbs for f in fake.files.values())
    # a damaged footer fails only its own files' maps, which are asked for alone, and right
    assert fake.calls[RECONSTRUCTION] == (in_first if flip else 0)
    if flip:  # each file of the damaged xorb parsed the batch's copy, then maybe its own
        assert set(per_file) == {xorbs[0]} and per_file.count(xorbs[0]) >= in_first
    else:
        assert per_file == []


def test_a_preloads_windows_are_asked_for_two_ahead_of_the_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rng = random.Random(4)
    fake = BatchedFake({f"f{i}": rng.randbytes(300 + i) for i in range(10)})
    files = sorted(fake.files.values(), key=lambda f: f.hash)
    monkeypatch.setattr(map_loader, "WINDOW", 2)  # five windows of two files

    async def main() -> None:
        parts = parts_in(tmp_path)
        host = parts.host
        maps = MapLoader(parts, FetchUrls())
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            maps.preload(fake, [(f.hash, f.size) for f in files], lambda t: None)
            await trio.testing.wait_all_tasks_blocked()
            assert fake.batches == 2  # windows 0 and 1
            maps.find(files[1].hash, files[1].size)  # not a window's first file: nothing
            await trio.testing.wait_all_tasks_blocked()
            assert fake.batches == 2
            maps.find(files[2].hash, files[2].size)  # window 1 reached: windows 2 and 3
            await trio.testing.wait_all_tasks_blocked()
            assert fake.batches == 4
            maps.find(files[0].hash, files[0].size)  # window 0 reached late: nothing new
            maps.find(files[4].hash, files[4].size)  # window 2 reached: window 4
            await trio.testing.wait_all_tasks_blocked()
            assert fake.batches == 5 and fake.calls[RECONSTRUCTION] == 0
            host.close()
            await host.stop()

    trio.run(main)


def test_a_preload_reads_the_maps_on_disk_a_batch_to_a_thread_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From any backend, batched or not; a map that fails its check there is built again,
    and a map not on disk is left to its read (this backend answers no batches)."""
    rng = random.Random(5)
    fake = FakeBackend({f"f{i}": rng.randbytes(200 + i) for i in range(BATCH_FILES + 30)})
    files = sorted(fake.files.values(), key=lambda f: f.hash)
    keys = [(f.hash, f.size) for f in files]
    calls = itertools.count()
    local = threading.local()  # which thread call a worker thread runs
    reads: list[int] = []  # the thread call of each cache.get_map

    async def main() -> None:
        parts = parts_in(tmp_path)
        host, cache = parts.host, parts.cache
        async with trio.open_nursery() as nursery:
            await nursery.start(host.run)
            first = MapLoader(parts, FetchUrls())
            for f in files[1:]:  # the first file's map is never on disk
                await first.load(fake, f.hash, f.size)
            await parts.writer.drain()
            bad = next((tmp_path / "maps").glob("*/*"))  # one map on disk is bad
            data = bytearray(bad.read_bytes())
            data[60] ^= 1
            bad.write_bytes(data)
            built = fake.calls[RECONSTRUCTION]
            get_map = cache.get_map

            def noted(file_hash: bytes) -> FileMap | None:
                reads.append(local.call)
                return get_map(file_hash)

            monkeypatch.setattr(cache, "get_map", noted)
            run_sync = trio.to_thread.run_sync

            async def tagged(fn: Callable[..., object], *args: object, **kw: Any) -> object:
                call = next(calls)

                def run(*a: object) -> object:
                    local.call = call
                    return fn(*a)

                return await run_sync(run, *args, **kw)

            monkeypatch.setattr(trio.to_thread, "run_sync", tagged)
            maps = MapLoader(parts, FetchUrls())
            maps.preload(fake, keys, lambda t: None)
            for f in files:  # as a read asks: memory, else the load (under way or new)
                fmap = maps.find(f.hash, f.size) or await maps.load(fake, f.hash, f.size)
                assert fmap.size == f.size
            assert sorted(Counter(reads).values()) == [len(files) - 1 - BATCH_FILES, BATCH_FILES]
            # built: the one never on disk, and the bad one
            assert fake.calls[RECONSTRUCTION] == built + 2
            host.close()
            await host.stop()

    trio.run(main)
