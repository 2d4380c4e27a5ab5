"""Single-bit flips of hf_xet's own uploads: each mutant is refused, or stored only when it
describes the same files and chunks; `store check` applies the intake rule to what is stored."""

import hashlib
import random
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from arkfs.service.archive_service import ArchiveService
from arkfs.store.errors import Rejected
from arkfs.store.local import LocalStore
from arkfs.store.shards import file_record
from arkfs.xet.hashing import string_to_hash
from arkfs.xet.shard import CasBlock, CasChunk, Shard, parse_shard, serialize_upload
from arkfs.xet.xorb import parse_xorb
from tests.support.hfxet import upload_files
from tests.support.recording_cas import recording_cas

SECRET = bytes(range(32))


@dataclass(frozen=True)
class Upload:
    """What hf_xet sent for a few files: its xorbs (by hash) and its one shard."""

    xorbs: dict[bytes, bytes]
    shard: bytes


@pytest.fixture(scope="module")
def upload(tmp_path_factory: pytest.TempPathFactory) -> Upload:
    root = tmp_path_factory.mktemp("hfxet")
    contents = {
        "2024-01-01.csv": b"date,value\n" + b"2024-01-01,7\n" * 9000,
        "random": random.Random(5).randbytes(70_000),
        "empty": b"",
    }
    for name, content in contents.items():
        (root / name).write_bytes(content)
    with recording_cas() as (url, rec):
        upload_files(url, [root / n for n in contents])
    (shard,) = rec.shards
    return Upload({string_to_hash(k): v for k, v in rec.xorbs.items()}, shard)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    with LocalStore.open(tmp_path / "store") as s:
        yield s


def flips(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Every single-bit flip of data, with the bit's index."""
    for bit in range(len(data) * 8):
        mutant = bytearray(data)
        mutant[bit // 8] ^= 1 << (bit % 8)
        yield bit, bytes(mutant)


def described(shard: Shard) -> tuple[object, ...]:
    """What a shard says about files and chunks. Free: the application identifier, the global
    dedup flag (a client's hint; every chunk it may flag is in the xorb), and the flags of the
    empty file (its verification entries are none, its digest may be left out, and a dropped
    extension reads as one more empty file)."""
    files = {(f.file_hash, f.terms, f.verification or ()) for f in shard.files}
    blocks = tuple(
        replace(b, chunks=tuple(replace(c, flags=0) for c in b.chunks)) for b in shard.cas_blocks
    )
    return files, blocks


def test_every_bit_flip_of_an_hf_xet_shard_is_refused_or_harmless(
    upload: Upload, store: LocalStore
) -> None:
    service = ArchiveService(store, SECRET, "here")
    for h, data in upload.xorbs.items():
        assert service.put_xorb(h, data)
    original = parse_shard(upload.shard)
    digests = {f.file_hash: file_record(f).sha256 for f in original.files}
    refused = accepted = 0
    for bit, mutant in flips(upload.shard):
        try:
            service.put_shard(mutant)
        except Rejected as exc:
            assert "\n" not in str(exc)
            refused += 1
            continue
        accepted += 1
        assert described(parse_shard(mutant)) == described(original), f"bit {bit} was stored"
        for block in parse_shard(mutant).files:  # a digest it carries is the file's
            assert file_record(block).sha256 in (None, digests[block.file_hash]), f"bit {bit}"
    # Before the shard rule, 2,387 of 5,760 flips of a like shard were stored, 1,539 of them
    # describing other chunks or digests. Now only what described() leaves free is.
    assert accepted < 150 and accepted + refused == len(upload.shard) * 8
    assert service.put_shard(upload.shard)
    assert store.check() == []
    for block in original.files:
        assert store.get_file(block.file_hash).terms == block.terms


def test_store_check_applies_the_intake_rule(upload: Upload, store: LocalStore) -> None:
    service = ArchiveService(store, SECRET, "here")
    for h, data in upload.xorbs.items():
        service.put_xorb(h, data)
    shard = parse_shard(upload.shard)
    block = shard.cas_blocks[0]
    chunk = block.chunks[0]
    bad_chunk = CasChunk(hashlib.sha256(b"other").digest(), chunk.byte_range_start, 1)
    bad = Shard(shard.files, (CasBlock(block.xorb_hash, (bad_chunk, *block.chunks[1:]), 1, 0),))
    data = serialize_upload(bad)
    with pytest.raises(Rejected, match=r"cas block 0: .* chunk 0 hash"):
        service.put_shard(data)
    # Past intake (an older server, or an edit on disk), `store check` finds it by the same rule.
    assert store.put_shard(hashlib.sha256(data).digest(), data, [], [])
    (problem,) = store.check()
    assert "disagrees with its xorbs: cas block 0: " in problem and "chunk 0 hash" in problem


@pytest.mark.slow
def test_bit_flips_of_an_hf_xet_xorb_are_refused_or_identical(
    upload: Upload, store: LocalStore
) -> None:
    service = ArchiveService(store, SECRET, "here")
    xorb_hash, data = max(upload.xorbs.items(), key=lambda kv: len(kv[1]))
    chunks = parse_xorb(data, xorb_hash).chunks
    refused = accepted = 0
    for bit, mutant in flips(data):
        if bit >= 8 * 64 and bit % 61:  # every bit of the first chunk header, then a stride
            continue
        try:
            service.put_xorb(xorb_hash, mutant)
        except Rejected:
            refused += 1
            continue
        accepted += 1
        assert parse_xorb(mutant, xorb_hash).chunks == chunks, f"bit {bit}"
    assert refused > 0
    assert store.check() == []
