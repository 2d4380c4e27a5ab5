"""ChunkCache: checked reads of chunks, footers and file maps, atomic files, LRU eviction
within max_bytes, the startup scan."""

import os
import random
from dataclasses import replace
from pathlib import Path

from arkfs.mount.chunk_cache import ChunkCache
from arkfs.mount.file_map import FileMap, build_map, pack_map
from arkfs.xet.hashing import chunk_hash, file_hash, hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import serialize_xorb


def chunks(n: int, size: int = 1000, seed: int = 0) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        data = rng.randbytes(size)
        out.append((chunk_hash(data), data))
    return out


def path_of(root: Path, h: bytes, kind: str = "chunks") -> Path:
    name = hash_to_string(h)
    return root / kind / name[:2] / name


def test_put_get_and_layout(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    items = chunks(3)
    cache.put_chunks(items)
    assert all(cache.has(h) for h, _ in items)
    assert cache.used_bytes == 3000 and len(cache) == 3
    for h, data in items:
        assert path_of(tmp_path, h).read_bytes() == data
    other = chunk_hash(b"not stored")
    assert cache.get_chunks([h for h, _ in items] + [other]) == dict(items)


def test_bad_file_is_deleted_and_reported_missing(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    (h, data), (h2, data2) = chunks(2)
    cache.put_chunks([(h, data), (h2, data2)])
    p = path_of(tmp_path, h)
    flipped = bytearray(data)
    flipped[500] ^= 1
    p.write_bytes(bytes(flipped))
    assert cache.get_chunks([h, h2]) == {h2: data2}
    assert not p.exists() and not cache.has(h)
    assert cache.bad_files == 1 and cache.used_bytes == 1000


def test_eviction_keeps_within_max_bytes_in_lru_order(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 3000)
    cache.scan()
    a, b, c, d = chunks(4)
    cache.put_chunks([a, b, c])
    assert cache.get_chunks([a[0]]) == {a[0]: a[1]}  # a is now the most recently used
    cache.put_chunks([d])
    assert cache.used_bytes <= 3000
    assert not cache.has(b[0]) and not path_of(tmp_path, b[0]).exists()
    assert all(cache.has(h) for h, _ in (a, c, d))
    cache.put_chunks([(chunk_hash(bytes(4000)), bytes(4000))])  # larger than the cache
    assert cache.used_bytes <= 3000


def test_scan_restores_index_in_mtime_order(tmp_path: Path) -> None:
    first = ChunkCache(tmp_path, 1 << 20)
    first.scan()
    items = chunks(4)
    first.put_chunks(items)
    for age, (h, _) in enumerate(reversed(items)):  # items[0] oldest
        t = 1_000_000 - age * 1000
        os.utime(path_of(tmp_path, h), (t, t))
    (tmp_path / "chunks" / "ab").mkdir(exist_ok=True)
    junk = tmp_path / "chunks" / "ab" / "not-a-hash"
    junk.write_bytes(b"x")
    stale = tmp_path / "chunks" / "ab" / ".tmp-0123456789abcdef"
    stale.write_bytes(b"left by a crashed writer")
    second = ChunkCache(tmp_path, 2000)  # smaller: the scan trims the two oldest
    second.scan()
    assert not stale.exists()
    assert second.used_bytes == 2000
    assert [second.has(h) for h, _ in items] == [False, False, True, True]
    assert not path_of(tmp_path, items[0][0]).exists()


def test_footers_round_trip_and_bad_ones_are_dropped(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    xorb = serialize_xorb(chunks(5, size=3000))
    cache.put_footer(xorb.footer)
    assert cache.get_footer(xorb.hash) == xorb.footer
    reopened = ChunkCache(tmp_path, 1 << 20)
    reopened.scan()
    assert reopened.get_footer(xorb.hash) == xorb.footer
    p = path_of(tmp_path, xorb.hash, "footers")
    data = bytearray(p.read_bytes())
    data[60] ^= 1  # inside the chunk hashes: the footer no longer gives the xorb hash
    p.write_bytes(bytes(data))
    assert reopened.get_footer(xorb.hash) is None
    assert not p.exists() and reopened.bad_files == 1


def file_map(seed: int = 0) -> FileMap:
    """The verified map of a file of five 3000-byte chunks in one xorb."""
    items = chunks(5, size=3000, seed=seed)
    xorb = serialize_xorb(items)
    fh = file_hash([(h, len(d)) for h, d in items])
    return build_map(fh, 15000, [Term(xorb.hash, 0, 5, 15000)], {xorb.hash: xorb.footer})


def test_maps_round_trip_and_bad_ones_are_dropped(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    fmap = file_map()
    cache.put_map(fmap)
    reopened = ChunkCache(tmp_path, 1 << 20)
    reopened.scan()
    got = reopened.get_map(fmap.file_hash)
    assert got is not None and got.file_hash == fmap.file_hash and got.size == fmap.size
    assert (got.ends, got.hashes, got.xorbs) == (fmap.ends, fmap.hashes, fmap.xorbs)
    assert (got.index, got.packed_start, got.packed_end) == (
        fmap.index,
        fmap.packed_start,
        fmap.packed_end,
    )
    p = path_of(tmp_path, fmap.file_hash, "maps")
    good = p.read_bytes()
    forged_hash = replace(fmap, hashes=bytes(32) + fmap.hashes[32:])
    forged_size = replace(fmap, size=fmap.size + 1)
    other = file_map(seed=1)
    for n, damaged in enumerate(
        [
            good[:100] + bytes([good[100] ^ 1]) + good[101:],  # fails the digest
            pack_map(forged_hash),  # a sound file whose chunks do not give the file hash
            pack_map(forged_size),  # ... or whose chunks do not hold its size
            pack_map(other),  # the map of another file
            good[:-1],
        ],
        start=1,
    ):
        p.write_bytes(damaged)
        assert reopened.get_map(fmap.file_hash) is None
        assert not p.exists() and reopened.bad_files == n
        reopened.put_map(fmap)
    assert reopened.get_map(fmap.file_hash) is not None
