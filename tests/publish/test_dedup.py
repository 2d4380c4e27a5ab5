"""The publisher's chunk index and fragmentation rule."""

import pytest

from arkfs.publish.dedup import (
    LOW_FACTOR,
    MIN_RUN_BYTES,
    MIN_RUN_CHUNKS,
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


def test_fragmentation_keeps_long_ranges_with_hysteresis() -> None:
    f = Fragmentation()
    assert f.accept(MIN_RUN_CHUNKS, 0) and f.accept(1, MIN_RUN_BYTES)  # long on their own
    for _ in range(3):
        f.placed(extends=False)
        for _ in range(15):
            f.placed(extends=True)  # ranges of 16 chunks
    assert f.accept(1, 1000)  # one short run among long ranges is fine
    for _ in range(40):
        f.placed(extends=False)  # many 1-chunk ranges drag the average down
    assert not f.accept(3, 1000) and f.low
    low = MIN_RUN_CHUNKS * LOW_FACTOR
    for _ in range(6):
        f.placed(extends=False)
        for _ in range(int(low) + 1):
            f.placed(extends=True)
    assert f.low and not f.accept(2, 1000)  # above the low mark, but not yet back at MIN
