"""The publisher's chunk index and fragmentation rule."""

import pytest

from arkfs.publish.dedup import (
    LOW_FACTOR,
    MIN_RUN_BYTES,
    MIN_RUN_CHUNKS,
    WINDOW,
    ChunkIndex,
    Fragmentation,
    XorbRef,
)
from arkfs.xet.shard import CasBlock, CasChunk, Shard, ShardFooter, keyed_chunk_hash

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_find_prefers_the_location_that_continues_the_run() -> None:
    index = ChunkIndex()
    x, y = XorbRef(b"x" * 32), XorbRef(b"y" * 32)
    common = b"c" * 32
    index.add(common, (x, 66))
    index.add(common, (y, 5))
    index.add(common, (x, 632))
    assert index.find(common) == (x, 66)
    assert index.find(common, after=(x, 631)) == (x, 632)
    assert index.find(common, after=(y, 5)) == (y, 5)  # the same chunk repeated
    assert index.find(b"u" * 32) is None


def test_keyed_shards_match_only_chunks_we_hold() -> None:
    key = bytes(range(32))
    ours, other = b"a" * 32, b"b" * 32
    block = CasBlock(b"x" * 32, (CasChunk(keyed_chunk_hash(key, ours), 0, 10),), 10, 20)
    index = ChunkIndex()
    index.add_shard(
        Shard(cas_blocks=(block,), footer=ShardFooter(chunk_hash_key=key, key_expiry=2**62))
    )
    loc = index.find(ours)
    assert loc is not None and loc[0].hash == b"x" * 32 and loc[1] == 0
    assert index.find(other) is None


def test_expired_keys_match_nothing() -> None:
    key = bytes(range(32))
    h = b"a" * 32
    block = CasBlock(b"x" * 32, (CasChunk(keyed_chunk_hash(key, h), 0, 10),), 10, 20)
    index = ChunkIndex()
    index.add_shard(
        Shard(cas_blocks=(block,), footer=ShardFooter(chunk_hash_key=key, key_expiry=1))
    )
    assert index.find(h) is None


def _ranges(f: Fragmentation, count: int, chunks: int) -> None:
    """Place count ranges of that many chunks each."""
    for _ in range(count):
        f.placed(extends=False)
        for _ in range(chunks - 1):
            f.placed(extends=True)


def test_fragmentation_references_every_run_until_its_window_is_full() -> None:
    """A file of fewer than WINDOW ranges keeps every run (hf_xet's DefragPrevention has no
    estimate before): a small file changed in the middle re-sends only the change."""
    f = Fragmentation()
    _ranges(f, WINDOW - 1, 1)
    assert f.accept(1, 1000)
    _ranges(f, 1, 1)
    _ranges(f, WINDOW, 2)  # the window now holds only ranges of 2 chunks
    assert not f.accept(1, 1000)  # shorter than the average, which is under the floor
    assert f.accept(3, 1000)  # longer than the average: it raises it
    assert f.accept(MIN_RUN_CHUNKS, 0) and f.accept(1, MIN_RUN_BYTES)  # long on their own


def test_fragmentation_has_hysteresis() -> None:
    f = Fragmentation()
    between = int(MIN_RUN_CHUNKS * (1 + LOW_FACTOR) / 2)  # over the low floor, under MIN
    assert MIN_RUN_CHUNKS * LOW_FACTOR < between < MIN_RUN_CHUNKS
    _ranges(f, WINDOW, between)
    assert f.accept(1, 1000)  # the average is over the low floor: short runs are kept
    _ranges(f, WINDOW, 2)
    assert not f.accept(1, 1000)  # refused: the floor is MIN_RUN_CHUNKS from now on
    _ranges(f, WINDOW, between)
    assert not f.accept(between - 1, 1000)  # above the low floor, but not yet back at MIN
    _ranges(f, WINDOW, MIN_RUN_CHUNKS)
    assert f.accept(1, 1000)  # back at MIN: the low floor again
    _ranges(f, WINDOW, between)
    assert f.accept(1, 1000)
