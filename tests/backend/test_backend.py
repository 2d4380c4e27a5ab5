"""One behavioural suite, run against the embedded store and against `arkfs serve`."""

import random
import time
from dataclasses import replace

import pytest

from arkfs.backend.base import Backend, NotBound, Refused
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import ZERO_HASH, chunk_hash, string_to_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import FileBlock, Shard, dedup_matches, serialize_upload
from arkfs.xet.xorb import CHUNK_HEADER_SIZE, serialize_xorb
from tests.backend.conftest import HfUpload, Side
from tests.backend.content import (
    Content,
    build_content,
    erc_of,
    manifest_of,
    read_range,
)


def test_whole_files_read_back(side: Side, content: Content) -> None:
    async def body(b: Backend) -> None:
        for name, f in content.files.items():
            if f.data:
                assert await read_range(b, f.hash, 0, len(f.data)) == f.data, name

    side.run(body)


def test_ranges_read_back(side: Side, content: Content) -> None:
    rng = random.Random(5)

    async def body(b: Backend) -> None:
        for name in ("random", "repeated", "text"):
            data = content.files[name].data
            cases = [(0, 1), (len(data) - 1, len(data)), (len(data) - 10, len(data) + 100)]
            for _ in range(8):
                start = rng.randrange(len(data))
                cases.append((start, start + rng.choice([1, 7, 65_536, 300_000])))
            for start, end in cases:
                got = await read_range(b, content.files[name].hash, start, end)
                assert got == data[start:end], (name, start, end)

    side.run(body)


def test_fetch_gives_the_stored_bytes_and_footer_verifies(side: Side, content: Content) -> None:
    xorbs = {x.hash: x for x in content.xorbs}

    async def body(b: Backend) -> None:
        for f in content.files.values():
            if not f.data:
                continue
            rec = await b.reconstruction(f.hash, 0, len(f.data))
            for xh, ranges in rec.fetch.items():
                for fr in ranges:
                    got = await b.fetch(xh, fr)
                    assert got == xorbs[xh].data[fr.byte_start : fr.byte_end + 1]
                footer = await b.footer(xh, ranges[0])
                footer.verify()
                assert footer == xorbs[xh].footer

    side.run(body)


def test_reconstruction_refusals(side: Side, content: Content) -> None:
    random_file = content.files["random"]

    async def body(b: Backend) -> None:
        size = len(random_file.data)
        with pytest.raises(Refused, match="past"):
            await b.reconstruction(random_file.hash, size, size + 10)
        with pytest.raises(Refused):
            await b.reconstruction(content.files["empty"].hash, 0, 1)
        with pytest.raises(NotBound):
            await b.reconstruction(bytes(range(32)), 0, 1)

    side.run(body)


def test_has_file(side: Side, content: Content) -> None:
    async def body(b: Backend) -> None:
        for name, f in content.files.items():
            size = len(f.data)
            assert await b.has_file(f.hash, size), name
            assert not await b.has_file(f.hash, size + 1), name
            if size:
                assert not await b.has_file(f.hash, size - 1), name
        assert content.files["empty"].hash == ZERO_HASH
        assert not await b.has_file(bytes(range(32)), 10)
        assert not await b.has_file(bytes(range(32)), 0)

    side.run(body)


def test_uploads_are_idempotent(side: Side, content: Content) -> None:
    async def body(b: Backend) -> None:
        x = content.xorbs[0]
        assert await b.upload_xorb(x.hash, x.data) is False
        assert await b.upload_shard(content.shard) is False

    side.run(body)


def test_new_upload_is_inserted(side: Side) -> None:
    fresh = build_content({"fresh": random.Random(77).randbytes(300_000)})

    async def body(b: Backend) -> None:
        assert [await b.upload_xorb(x.hash, x.data) for x in fresh.xorbs] == [True] * len(
            fresh.xorbs
        )
        assert await b.upload_shard(fresh.shard) is True
        f = fresh.files["fresh"]
        assert await read_range(b, f.hash, 0, len(f.data)) == f.data

    side.run(body)


def test_corrupt_xorbs_refused(side: Side) -> None:
    data = random.Random(9).randbytes(20_000)  # incompressible: stored as it is
    good = serialize_xorb([(chunk_hash(data), data)])
    other = serialize_xorb([(chunk_hash(data[:100]), data[:100])])
    flipped = bytearray(good.data)
    flipped[CHUNK_HEADER_SIZE + 10] ^= 1

    async def body(b: Backend) -> None:
        with pytest.raises(Refused, match="xorb"):
            await b.upload_xorb(good.hash, bytes(flipped))
        with pytest.raises(Refused, match="xorb"):
            await b.upload_xorb(other.hash, good.data)
        with pytest.raises(Refused, match="xorb"):
            await b.upload_xorb(good.hash, good.data[:-10])
        assert not await b.has_file(good.hash, len(data))

    side.run(body)


def test_shard_naming_a_missing_xorb_refused(side: Side) -> None:
    data = random.Random(3).randbytes(20_000)
    missing = serialize_xorb([(chunk_hash(data), data)])
    block = FileBlock(chunk_hash(data), (Term(missing.hash, 0, 1, len(data)),))
    shard = serialize_upload(Shard(files=(block,)))

    async def body(b: Backend) -> None:
        with pytest.raises(Refused, match="not uploaded"):
            await b.upload_shard(shard)
        with pytest.raises(Refused, match="shard"):
            await b.upload_shard(b"not a shard" * 10)

    side.run(body)


def test_query_dedup_finds_a_files_first_chunk(side: Side, content: Content) -> None:
    f = content.files["random"]
    first = f.chunks[0]

    async def body(b: Backend) -> None:
        shard = await b.query_dedup(first)
        assert shard is not None
        matches = dedup_matches(shard, [first, *f.chunks[1:]], int(time.time()))
        xorb_hash, index = matches[first]
        (xorb,) = [x for x in content.xorbs if x.hash == xorb_hash]
        assert xorb.footer.chunk_hashes[index] == first
        stored = {c.chunk_hash for blk in shard.cas_blocks for c in blk.chunks}
        assert first not in stored  # keyed hashes: the reply does not list raw chunk hashes
        assert await b.query_dedup(bytes(range(32))) is None

    side.run(body)


def test_bind_then_archive(side: Side, content: Content) -> None:
    manifest = manifest_of(content.files)
    smaller = manifest_of({"small": content.files["small"]})
    erc = erc_of()

    async def body(b: Backend) -> None:
        await b.bind(manifest, erc)
        archive = await b.archive(manifest.ark)
        # A server may fill in where its CAS and token route are; the rest is as bound.
        assert replace(archive.manifest, cas_url=None, token_url=None) == manifest
        assert archive.erc == erc
        assert archive.version.created > 0
        assert manifest.ark in await b.list_archives("ark:99999/")
        assert manifest.ark in await b.list_archives()
        assert manifest.ark not in await b.list_archives("ark:12345/")
        await b.bind(smaller, erc)
        assert (await b.archive(manifest.ark)).manifest.entries == smaller.entries

    side.run(body)
    with LocalStore.open(side.store, create=False) as store:  # each bind kept as a version
        *_, first, second = store.list_versions(manifest.ark)
    assert (first.files, first.bytes) == (len(manifest.files), manifest.total_size)
    assert (second.follows, second.files, second.bytes) == (first.version, 1, smaller.total_size)


def test_versions_stay_and_each_reads_back_as_bound(side: Side, content: Content) -> None:
    """Every bind appends a version; the latest and each @vN read back identically on both
    backends: manifest, ERC, and the version record bind answered with."""
    ark = "ark:99999/fk4versions"
    first, second = manifest_of(content.files, ark), manifest_of({"s": content.files["small"]}, ark)
    erc1, erc2 = erc_of(ark), replace(erc_of(ark), who="Second, B.")

    async def body(b: Backend) -> None:
        with pytest.raises(NotBound, match=ark):
            await b.versions(ark)
        v1 = await b.bind(first, erc1)
        v2 = await b.bind(second, erc2, "only the small file")
        assert (v1.ark, v1.version, v1.follows, v1.message) == (ark, 1, None, "")
        assert (v1.files, v1.bytes) == (len(first.files), first.total_size)
        assert (v2.version, v2.follows, v2.message) == (2, 1, "only the small file")
        assert (v2.files, v2.bytes) == (1, second.total_size)
        assert v2.created >= v1.created > 0
        assert await b.versions(ark) == [v1, v2]
        for asked, (manifest, erc, version) in [
            (None, (second, erc2, v2)),
            (2, (second, erc2, v2)),
            (1, (first, erc1, v1)),
        ]:
            archive = await b.archive(ark, asked)
            assert archive.manifest.entries == manifest.entries, asked
            assert (archive.erc, archive.version) == (erc, version), asked
        with pytest.raises(NotBound, match="version 3"):
            await b.archive(ark, 3)
        with pytest.raises(NotBound, match="fk4unbound"):
            await b.archive("ark:99999/fk4unbound", 1)

    side.run(body)


def test_archive_of_an_unbound_ark(side: Side) -> None:
    async def body(b: Backend) -> None:
        with pytest.raises(NotBound, match="ark:99999/fk4nothing"):
            await b.archive("ark:99999/fk4nothing")

    side.run(body)


def test_bind_refuses_files_not_in_the_cas(side: Side, content: Content) -> None:
    small = content.files["small"]
    ark = "ark:99999/fk4refused"
    unknown = manifest_of({"small": replace(small, hash=bytes(range(32)))}, ark)
    wrong_size = manifest_of({"small": replace(small, data=small.data + b"!")}, ark)

    async def body(b: Backend) -> None:
        with pytest.raises(Refused, match="data/small"):
            await b.bind(unknown, erc_of(ark))
        with pytest.raises(Refused, match="data/small"):
            await b.bind(wrong_size, erc_of(ark))
        with pytest.raises(NotBound):
            await b.archive(ark)

    side.run(body)


def test_hf_xet_uploads_through_the_backend(side: Side, hf_upload: HfUpload) -> None:
    """hf_xet's own xorbs (upload form) and shards, sent through the backend, read back."""
    rng = random.Random(2)
    rec = hf_upload.recording

    async def body(b: Backend) -> None:
        for name, xorb in rec.xorbs.items():
            await b.upload_xorb(string_to_hash(name), xorb)
        for shard in rec.shards:
            await b.upload_shard(shard)
        for name, (data, fh) in hf_upload.files.items():
            assert await b.has_file(fh, len(data)), name
            assert await read_range(b, fh, 0, len(data)) == data, name
            start = rng.randrange(len(data))
            end = start + rng.randrange(1, 200_000)
            assert await read_range(b, fh, start, end) == data[start:end], name

    side.run(body)
