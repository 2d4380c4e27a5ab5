"""ContentReader against real backends: files uploaded by hf_xet to `arkfs serve`, read
through EmbeddedBackend (the same store) and RemoteBackend (HTTP)."""

import random
import shutil
from collections.abc import Callable, Collection
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest
import trio

from arkfs.backend.base import Backend
from arkfs.mount.data.errors import ReadError
from arkfs.mount.data.reader import ContentReader
from arkfs.xet.constants import HASH_SIZE, MAX_CHUNK_SIZE
from arkfs.xet.hashing import ZERO_HASH, chunk_hash, hash_to_string
from arkfs.xet.reconstruction import Reconstruction
from arkfs.xet.xorb import CHUNK_HEADER_SIZE, footer_record, footer_tail, parse_footer
from tests.mount.data.conftest import BIG, MIB, File, OpenReader, Published
from tests.support.server import arkfs_server

KINDS = ["embedded", "remote"]
MAX_PACKED_CHUNK = MAX_CHUNK_SIZE + CHUNK_HEADER_SIZE


async def packed_bytes(backend: Backend, file_hash: bytes, start: int, end: int) -> int:
    """Packed bytes of exactly the chunks that hold [start, end), per the backend's plan."""
    rec = await backend.reconstruction(file_hash, start, end)
    return sum(fr.byte_end - fr.byte_start + 1 for frs in rec.fetch.values() for fr in frs)


async def drain_writes(reader: ContentReader) -> None:
    """Wait until the chunks fetched so far are written to the disk cache."""
    with trio.fail_after(60):
        while reader.stats.to_json()["write_backlog_bytes"]:
            await trio.sleep(0.05)


@pytest.mark.parametrize("kind", KINDS)
def test_concurrent_random_reads_return_the_original_bytes(
    kind: str, published: Published, open_reader: OpenReader
) -> None:
    files = list(published.files.values())
    sizes = [1, 100, 4096, 65536, 131072, 200_000, MIB, 3 * MIB]

    async def reader_task(reader: ContentReader, backend: Backend, seed: int) -> None:
        rng = random.Random(seed)
        for _ in range(75):
            f = rng.choice(files)
            offset = rng.randrange(f.size + 10)
            length = rng.choice(sizes)
            got = await reader.read(backend, f.hash, f.size, offset, length)
            assert got == f.data[offset : offset + length], (f.size, offset, length)

    async def main() -> None:
        # A small memory LRU, so that reads also go through the disk cache and eviction.
        async with open_reader(kind, memory_bytes=2 * MIB) as (reader, backend):
            async with trio.open_nursery() as nursery:
                for seed in range(4):
                    nursery.start_soon(reader_task, reader, backend, seed)
            stats = reader.stats
            assert stats.reads == 300 and stats.errors == 0
            assert stats.fetches > 0 and stats.disk_hits > 0 and stats.memory_hits > 0

    trio.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_eof_and_empty_file(kind: str, published: Published, open_reader: OpenReader) -> None:
    f = published.files["random-5MiB"]

    async def main() -> None:
        async with open_reader(kind) as (reader, backend):
            assert await reader.read(backend, ZERO_HASH, 0, 0, 4096) == b""
            assert await reader.read(backend, f.hash, f.size, f.size, 10) == b""
            assert await reader.read(backend, f.hash, f.size, f.size + 100, 10) == b""
            assert await reader.read(backend, f.hash, f.size, 0, 0) == b""
            assert reader.stats.maps_loaded == 0 and reader.stats.fetches == 0
            assert await reader.read(backend, f.hash, f.size, f.size - 5, 100) == f.data[-5:]
            assert reader.cached_fraction(ZERO_HASH, 0) == 1.0

    trio.run(main)


def test_read_parts_are_the_chunks_unjoined(published: Published, open_reader: OpenReader) -> None:
    """read_parts hands over views of the chunks a read spans, in order: joined, they are
    read()'s bytes; a range inside one chunk is one part."""
    f = published.files["random-5MiB"]

    async def main() -> None:
        async with open_reader("embedded") as (reader, backend):
            for offset, length in [(12345, 3 * MIB), (0, f.size), (f.size - 7, 100), (5, 10)]:
                parts = await reader.read_parts(backend, f.hash, f.size, offset, length)
                assert b"".join(parts) == f.data[offset : offset + length]
                assert await reader.read(backend, f.hash, f.size, offset, length) == b"".join(parts)
                assert (len(parts) > 1) == (length > MAX_CHUNK_SIZE), (offset, length)
            assert await reader.read_parts(backend, f.hash, f.size, f.size, 10) == []

    trio.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_size_or_hash_that_do_not_match_fail(
    kind: str, published: Published, open_reader: OpenReader
) -> None:
    f = published.files["text"]
    other = published.files["random-5MiB"]

    async def main() -> None:
        async with open_reader(kind) as (reader, backend):
            for file_hash, size in [
                (f.hash, f.size + 1),
                (f.hash, f.size - 1),
                (f.hash, other.size),
                (chunk_hash(b"no such file"), 1000),
            ]:
                with pytest.raises(ReadError):
                    await reader.read(backend, file_hash, size, 0, 100)
            assert reader.stats.errors == 4 and reader.stats.fetches == 0
            assert await reader.read(backend, f.hash, f.size, 10, 100) == f.data[10:110]

    trio.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_read_amplification_of_cold_reads(
    kind: str, tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    f = published.files[BIG]

    async def main() -> None:
        async with open_reader(kind) as (reader, backend):
            start = f.size // 2 + 12345
            want = await packed_bytes(backend, f.hash, start, start + MIB)
            assert (
                await reader.read(backend, f.hash, f.size, start, MIB)
                == f.data[start : start + MIB]
            )
            assert reader.stats.bytes_fetched == want <= MIB + 2 * MAX_PACKED_CHUNK
            assert reader.stats.prefetched_bytes == 0

        async with open_reader(kind, cache_dir=tmp_path / "cache-2") as (reader, backend):
            # A 4 KiB read inside one chunk fetches that chunk and nothing else.
            rng = random.Random(4)
            while True:
                start = rng.randrange(f.size - 4096)
                rec = await backend.reconstruction(f.hash, start, start + 4096)
                if len(rec.terms) == 1 and rec.terms[0].end - rec.terms[0].start == 1:
                    break
            want = await packed_bytes(backend, f.hash, start, start + 4096)
            got = await reader.read(backend, f.hash, f.size, start, 4096)
            assert got == f.data[start : start + 4096]
            assert reader.stats.fetches == 1
            assert reader.stats.bytes_fetched == want <= MAX_PACKED_CHUNK

    trio.run(main)


def test_concurrent_reads_of_one_range_share_one_fetch(
    published: Published, open_reader: OpenReader
) -> None:
    f = published.files[BIG]
    start = 10 * MIB

    async def main() -> None:
        async with open_reader("remote") as (reader, backend):
            want = await packed_bytes(backend, f.hash, start, start + 256 * 1024)
            results: list[bytes] = []

            async def one() -> None:
                results.append(await reader.read(backend, f.hash, f.size, start, 256 * 1024))

            async with trio.open_nursery() as nursery:
                for _ in range(8):
                    nursery.start_soon(one)
            assert results == [f.data[start : start + 256 * 1024]] * 8
            assert reader.stats.fetches == 1 and reader.stats.bytes_fetched == want
            assert reader.stats.maps_loaded == 1
            # arkfs serve sends the footers with the reconstruction: none is fetched, and
            # the chunks were claimed by the map while it was checked (the one fetch)
            assert reader.stats.footers_sent >= 1 and reader.stats.footer_fetches == 0
            assert reader.stats.early_loads > 0

    trio.run(main)


@pytest.mark.parametrize("kind", KINDS)
def test_sequential_reads_prefetch_random_reads_do_not(
    kind: str, published: Published, open_reader: OpenReader
) -> None:
    f = published.files[BIG]

    async def main() -> None:
        async with open_reader(kind) as (reader, backend):
            rng = random.Random(5)
            for offset in rng.sample(range(0, f.size - 4096, 3 * MIB), 20):
                got = await reader.read(backend, f.hash, f.size, offset, 4096)
                assert got == f.data[offset : offset + 4096]
            assert reader.stats.prefetched_bytes == 0
            offset = 0
            while offset < 24 * MIB:
                got = await reader.read(backend, f.hash, f.size, offset, 128 * 1024)
                assert got == f.data[offset : offset + len(got)]
                offset += len(got)
            assert reader.stats.prefetched_bytes > 0
            assert reader.stats.memory_hits > reader.stats.reads // 2

    trio.run(main)


def test_flipped_byte_in_a_stored_xorb_is_never_served(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    store = tmp_path / "store"
    shutil.copytree(published.store, store)
    f = published.files[BIG]

    async def flip() -> tuple[int, int]:
        """Flip a byte in the middle of a chunk the file uses; return that chunk's span."""
        async with open_reader("embedded", store=store) as (_reader, backend):
            rec = await backend.reconstruction(f.hash, 0, f.size)
        term = rec.terms[len(rec.terms) // 2]
        fr = rec.fetch_for(term)
        name = hash_to_string(term.xorb_hash)
        path = store / "xorbs" / name[:2] / name
        data = bytearray(path.read_bytes())
        data[(fr.byte_start + fr.byte_end) // 2] ^= 0x10
        path.write_bytes(bytes(data))
        return fr.byte_start, fr.byte_end

    trio.run(flip)

    async def read_all(reader: ContentReader, backend: Backend) -> int:
        errors = 0
        for offset in range(0, f.size, MIB):
            try:
                got = await reader.read(backend, f.hash, f.size, offset, MIB)
            except ReadError:
                errors += 1
            else:
                assert got == f.data[offset : offset + MIB]
        return errors

    async def main(url: str) -> None:
        for kind in KINDS:
            cache = tmp_path / f"cache-{kind}"
            async with open_reader(kind, cache_dir=cache, store=store, url=url) as (r, backend):
                assert await read_all(r, backend) >= 1
                assert r.stats.errors >= 1

    with arkfs_server(store, "--open-read") as (url, _proc):
        trio.run(main, url)


def test_flipped_byte_in_a_cache_file_is_refetched(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    f = published.files["random-5MiB"]
    cache = tmp_path / "cache"

    async def main() -> None:
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            assert await reader.read(backend, f.hash, f.size, 0, f.size) == f.data
        victim = sorted((cache / "packs").glob("*/*"))[0]
        bad = bytearray(victim.read_bytes())
        bad[-100] ^= 1  # in the last chunk's bytes
        victim.write_bytes(bytes(bad))
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            assert await reader.read(backend, f.hash, f.size, 0, f.size) == f.data
            assert reader.stats.fetches >= 1
            assert reader.stats.to_json()["cache_bad_files"] == 1
            await drain_writes(reader)
        # The bad pack is gone; its chunks were written again from the verified fetch.
        assert not victim.exists() or victim.read_bytes() != bytes(bad)
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            assert await reader.read(backend, f.hash, f.size, 0, f.size) == f.data
            assert reader.stats.fetches == 0

    trio.run(main)


def test_cache_stays_within_max_bytes(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    cache = tmp_path / "cache"
    limit = MIB

    async def main() -> None:
        async with open_reader("embedded", cache_dir=cache, max_bytes=limit) as (reader, b):
            for name in ("random-5MiB", "text", "float32"):
                f = published.files[name]
                assert await reader.read(b, f.hash, f.size, 0, f.size) == f.data
                await drain_writes(reader)
                assert 0 < cast(int, reader.stats.to_json()["cache_bytes"]) <= limit

    trio.run(main)
    on_disk = sum(p.stat().st_size for p in cache.rglob("*") if p.is_file())
    assert 0 < on_disk <= limit


def test_cache_persists_across_readers(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    cache = tmp_path / "cache"
    files = [published.files[n] for n in ("random-5MiB", "text", "repeated-blocks")]

    async def main() -> None:
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            for f in files:
                assert reader.cached_fraction(f.hash, f.size) == 0.0
                assert await reader.read(backend, f.hash, f.size, 0, f.size) == f.data
            assert reader.stats.fetches > 0 and reader.stats.footers_sent > 0
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            for f in files:
                assert await reader.read(backend, f.hash, f.size, 0, f.size) == f.data
                assert reader.cached_fraction(f.hash, f.size) == 1.0
            stats = reader.stats
            assert stats.fetches == stats.bytes_fetched == stats.footer_fetches == 0
            assert stats.disk_hits > 0

    trio.run(main)


def test_server_stopped_then_restarted(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    f = published.files[BIG]
    warm, cold = (0, 2 * MIB), (40 * MIB, 41 * MIB)
    quick = {"retries": 1, "retry_time": 1.0, "timeout": 2.0, "fail_fast": 0.1}

    async def read(reader: ContentReader, backend: Backend, span: tuple[int, int]) -> None:
        start, end = span
        assert await reader.read(backend, f.hash, f.size, start, end - start) == f.data[start:end]

    async def main() -> None:
        with arkfs_server(published.store, "--open-read") as (url, _proc):
            port = url.rsplit(":", 1)[1]
        context = open_reader("remote", url=url, backend_options=quick, memory_bytes=256 * 1024)
        async with context as (reader, backend):
            with arkfs_server(published.store, "--open-read", "--port", port):
                await read(reader, backend, warm)
                await drain_writes(reader)
            with trio.fail_after(60):
                await read(reader, backend, warm)  # from the disk cache
                with pytest.raises(ReadError):
                    await read(reader, backend, cold)
            # A new server signs with a new key: the old fetch URLs are refused and renewed.
            with arkfs_server(published.store, "--open-read", "--port", port):
                await read(reader, backend, cold)
            assert reader.stats.url_refreshes >= 1
            assert reader.stats.disk_hits > 0 and reader.stats.errors == 1

    trio.run(main)


def test_reads_after_aclose_fail(published: Published, open_reader: OpenReader) -> None:
    f = published.files["text"]

    async def main() -> None:
        async with open_reader("embedded") as (reader, backend):
            await reader.aclose()
            with pytest.raises(ReadError, match="closed"):
                await reader.read(backend, f.hash, f.size, 0, 100)

    trio.run(main)


def test_a_cached_file_reads_with_the_backend_gone(
    tmp_path: Path, published: Published, open_reader: OpenReader
) -> None:
    """The file map is on disk with the chunks: a new reader needs no backend for them."""
    f = published.files[BIG]
    cache = tmp_path / "cache"
    warm, cold = (5 * MIB, 7 * MIB), (30 * MIB, 31 * MIB)
    quick = {"retries": 1, "retry_time": 1.0, "timeout": 2.0, "fail_fast": 0.1}

    async def main(gone: str) -> None:
        async with open_reader("remote", cache_dir=cache) as (reader, backend):
            await read_span(reader, backend, f, warm)
            await drain_writes(reader)
        context = open_reader("remote", cache_dir=cache, url=gone, backend_options=quick)
        async with context as (reader, backend):
            with trio.fail_after(60):
                await read_span(reader, backend, f, warm)
                with pytest.raises(ReadError, match="cannot reach"):
                    await read_span(reader, backend, f, cold)
            stats = reader.stats
            assert stats.maps_from_disk == 1 and stats.maps_loaded == 0
            assert stats.fetches == stats.footer_fetches == 0 and stats.disk_hits > 0

    with arkfs_server(published.store, "--open-read") as (url, _proc):
        pass
    trio.run(main, url)


async def read_span(
    reader: ContentReader, backend: Backend, f: File, span: tuple[int, int]
) -> None:
    """Read bytes [start, end) of f and check them."""
    start, end = span
    assert await reader.read(backend, f.hash, f.size, start, end - start) == f.data[start:end]


@pytest.mark.parametrize("streams", [False, True])
def test_two_sequential_readers_of_one_file_prefetch_if_named(
    streams: bool, published: Published, open_reader: OpenReader
) -> None:
    """Two readers going through one file at different places, in turns: as one stream of
    the file (the default) they look random, as two named streams both are sequential."""
    f = published.files[BIG]
    step = 128 * 1024

    async def main() -> None:
        async with open_reader("embedded") as (reader, backend):
            at = {1: 0, 2: 32 * MIB}
            for _ in range(40):
                for who in (1, 2):
                    got = await reader.read(
                        backend, f.hash, f.size, at[who], step, stream=who if streams else None
                    )
                    assert got == f.data[at[who] : at[who] + step]
                    at[who] += step
            for who in (1, 2):
                reader.end_stream(who)
            assert (reader.stats.prefetched_bytes > 0) is streams

    trio.run(main)


def test_around_a_read_are_its_chunks_widened_to_whole_pages(
    published: Published, open_reader: OpenReader
) -> None:
    f = published.files["random-5MiB"]
    page = 4096

    async def main() -> None:
        async with open_reader("embedded") as (reader, backend):
            offset = 3 * MIB + 1000
            assert reader.around(f.hash, f.size, offset, offset + page, page) is None  # no map
            await reader.read(backend, f.hash, f.size, offset, page)
            got = reader.around(f.hash, f.size, offset, offset + page)
            assert got is not None
            start, data = got  # its chunks, which rarely start or end on a page
            assert start <= offset and start + len(data) >= offset + page
            assert data == f.data[start : start + len(data)]
            # The neighbours are at hand once read (memory here): whole pages around them.
            await reader.read(backend, f.hash, f.size, start - page, len(data) + 2 * page)
            got = reader.around(f.hash, f.size, offset, offset + page, page)
            assert got is not None
            lo, wide = got
            assert (
                lo == start // page * page
                and len(wide) == -(-(start + len(data)) // page) * page - lo
            )
            assert wide == f.data[lo : lo + len(wide)]

    trio.run(main)


class Forged:
    """A backend whose reconstructions are changed by forge before the reader sees them."""

    def __init__(self, backend: Backend, forge: Callable[[Reconstruction], Reconstruction]):
        self.backend = backend
        self.name = backend.name
        self.forge = forge

    def __getattr__(self, name: str) -> object:
        return getattr(self.backend, name)

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        return self.forge(await self.backend.reconstruction(file_hash, start, end, held))


def _forged_footer(rec: Reconstruction) -> Reconstruction:
    """One sent footer with a chunk hash changed (consistent with nothing: neither its
    xorb hash nor the file hash)."""
    xh = rec.terms[len(rec.terms) // 2].xorb_hash
    footer = parse_footer(*footer_tail(rec.footers[xh]))
    hashes = (bytes(HASH_SIZE), *footer.chunk_hashes[1:])
    forged = footer_record(replace(footer, chunk_hashes=hashes))
    return replace(rec, footers={**rec.footers, xh: forged})


def _term_past_its_xorb(rec: Reconstruction) -> Reconstruction:
    """The middle term names chunks past the end of its xorb, as its sent footer lists it."""
    terms = list(rec.terms)
    t = terms[len(terms) // 2]
    terms[len(terms) // 2] = replace(t, end=t.end + 5)
    return replace(rec, terms=tuple(terms))


@pytest.mark.parametrize(
    ("forge", "message"),
    [
        (_forged_footer, "fails verification: xorb footer"),
        (_term_past_its_xorb, "fails verification: its terms name chunks its footers lack"),
    ],
)
def test_a_forged_reconstruction_fails_the_read_and_says_why(
    forge: Callable[[Reconstruction], Reconstruction],
    message: str,
    published: Published,
    open_reader: OpenReader,
) -> None:
    """A sent footer that is not its xorb's, or a term past its xorb's chunks, fails the
    read with its reason, and nothing of it is kept."""
    f = published.files[BIG]

    async def main() -> None:
        async with open_reader("remote") as (reader, backend):
            forged = cast(Backend, Forged(backend, forge))
            with pytest.raises(ReadError, match=message):
                await reader.read(forged, f.hash, f.size, f.size // 2, 4096)
            assert reader.stats.footers_sent == 0
            # Nothing of it was kept: the honest backend's read maps the file again.
            assert await reader.read(backend, f.hash, f.size, 0, 4096) == f.data[:4096]
            assert reader.stats.maps_loaded == 1

    trio.run(main)
