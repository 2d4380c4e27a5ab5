"""ChunkCache: checked reads of chunks, footers and file maps, atomic files, LRU eviction
within max_bytes, the startup scan."""

import ctypes
import mmap
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from arkfs.mount.data import chunk_cache
from arkfs.mount.data.chunk_cache import ChunkCache, pack_bytes
from arkfs.mount.data.eviction import EvictionPolicy
from arkfs.mount.data.file_map import FileMap, build_map, pack_map
from arkfs.util.direct import MIN_DIRECT, DirectFile
from arkfs.xet.hashing import chunk_hash, file_hash, hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import serialize_xorb

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def chunks(n: int, size: int = 1000, seed: int = 0) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        data = rng.randbytes(size)
        out.append((chunk_hash(data), data))
    return out


def path_of(root: Path, h: bytes, kind: str) -> Path:
    name = hash_to_string(h)
    return root / kind / name[:2] / name


def packs(root: Path) -> list[Path]:
    return sorted((root / "packs").glob("*/*"))


def put_each(cache: ChunkCache, items: list[tuple[bytes, bytes]]) -> None:
    """One pack per chunk, so each can be evicted on its own."""
    for item in items:
        cache.put_chunks([item])


def test_put_get_and_layout(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    items = chunks(3)
    cache.put_chunks(items)
    assert all(cache.has(h) for h, _ in items) and len(cache) == 3
    (pack,) = packs(tmp_path)
    assert pack.read_bytes() == pack_bytes(items)
    assert cache.used_bytes == pack.stat().st_size
    other = chunk_hash(b"not stored")
    assert cache.get_chunks([h for h, _ in items] + [other]) == dict(items)
    cache.put_chunks(items)  # already there: no second pack
    assert len(packs(tmp_path)) == 1


def test_a_cache_of_size_zero_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """max_bytes 0 (`arkfs get --no-cache`): chunks, maps and blocks are not even written."""
    written: list[Path] = []
    monkeypatch.setattr(chunk_cache, "write_atomic", lambda path, *_, **__: written.append(path))
    cache = ChunkCache(tmp_path, 0)
    cache.scan()
    items = chunks(3)
    cache.put_chunks(items)
    cache.put_map(file_map())
    cache.put_block(bytes(32), b"data")
    assert written == [] and len(cache) == 0 and not cache.has(items[0][0])


def test_a_bad_chunk_drops_its_pack(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    (h, data), (h2, data2), (h3, data3) = chunks(3)
    cache.put_chunks([(h, data), (h2, data2)])
    cache.put_chunks([(h3, data3)])
    bad = next(p for p in packs(tmp_path) if p.read_bytes().endswith(data2))
    raw = bytearray(bad.read_bytes())
    raw[-500] ^= 1
    bad.write_bytes(bytes(raw))
    assert cache.get_chunks([h, h2, h3]) == {h3: data3}
    assert not bad.exists() and not cache.has(h) and not cache.has(h2)
    assert cache.bad_files == 1 and len(cache) == 1


def test_chunks_apart_in_a_pack_are_views_of_one_read(tmp_path: Path) -> None:
    """Chunks 0, 2 and 5 of a pack: one read of their span, each chunk exactly its bytes,
    a view of that read (not a copy)."""
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    items = chunks(6, seed=3)
    cache.put_chunks(items)
    asked = [items[5][0], items[0][0], items[2][0], items[2][0]]
    got = cache.get_chunks(asked)
    assert got == {h: d for h, d in items if h in asked}
    views = [c for c in got.values() if isinstance(c, memoryview)]
    assert len(views) == 3 and len({id(v.obj) for v in views}) == 1


def test_a_pack_cut_short_is_dropped_and_its_chunks_missing(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    items = chunks(3, seed=4)
    cache.put_chunks(items)
    (pack,) = packs(tmp_path)
    os.truncate(pack, pack.stat().st_size - 10)  # the last chunk's end is gone
    assert cache.get_chunks([h for h, _ in items]) == {}
    assert not pack.exists() and len(cache) == 0 and cache.bad_files == 1


def test_chunks_at_hand_are_read_without_blocking_and_checked(tmp_path: Path) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    items = chunks(2)
    (h, data), (h2, _) = items
    cache.put_chunks(items)
    assert cache.chunks_at_hand([h]) is None  # its pack is not open yet
    assert cache.get_chunks([h]) == {h: data}  # opens it, and the page cache holds it
    assert cache.chunks_at_hand([h, h2]) == dict(items)
    assert cache.chunks_at_hand([h, chunk_hash(b"not stored")]) is None
    (pack,) = packs(tmp_path)
    raw = bytearray(pack.read_bytes())
    raw[-1] ^= 1
    pack.write_bytes(bytes(raw))  # in place: the open file sees it
    assert cache.chunks_at_hand([h2]) is None  # a damaged chunk is left to get_chunks
    assert cache.get_chunks([h, h2]) == {}
    assert not pack.exists() and not cache.has(h) and cache.bad_files == 1


def _first_page_cached(path: Path) -> bool:
    """Whether the page cache holds path's first page: mincore(2) of a mapping of it, which,
    unlike a RWF_NOWAIT read (read_if_cached), starts no readahead that could fill it."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    with path.open("rb") as f, mmap.mmap(f.fileno(), 4096, access=mmap.ACCESS_COPY) as m:
        first = ctypes.c_char.from_buffer(m)
        vec = ctypes.create_string_buffer(1)
        ok = libc.mincore(ctypes.addressof(first), 4096, vec) == 0
        del first  # the mapping closes only once no view of it is left
    assert ok, os.strerror(ctypes.get_errno())
    return bool(vec.raw[0] & 1)


def test_packs_are_written_past_the_page_cache(tmp_path: Path) -> None:
    probe = DirectFile(tmp_path / "probe", MIN_DIRECT)
    refused = probe.direct is None
    probe.close()
    if refused:
        pytest.skip(f"the file system of {tmp_path} refuses O_DIRECT")
    cache = ChunkCache(tmp_path / "cache", 1 << 30)
    cache.scan()
    items = chunks(8, size=64 * 1024)
    cache.put_chunks(items)
    (pack,) = packs(tmp_path / "cache")
    assert not _first_page_cached(pack)
    assert pack.read_bytes() == pack_bytes(items)
    assert _first_page_cached(pack)  # the probe itself sees a cached page
    assert cache.get_chunks([h for h, _ in items]) == dict(items)


def test_eviction_keeps_within_max_bytes_in_lru_order(tmp_path: Path) -> None:
    a, b, c, d = chunks(4)
    one = len(pack_bytes([a]))
    cache = ChunkCache(tmp_path, 3 * one)
    cache.scan()
    put_each(cache, [a, b, c])
    assert cache.get_chunks([a[0]]) == {a[0]: a[1]}  # a is now the most recently used
    put_each(cache, [d])
    assert cache.used_bytes <= 3 * one and len(packs(tmp_path)) == 3
    assert not cache.has(b[0])
    assert all(cache.has(h) for h, _ in (a, c, d))
    cache.put_chunks([(chunk_hash(bytes(4000)), bytes(4000))])  # larger than the cache
    assert cache.used_bytes <= 3 * one


class KeepFirst:
    """A policy other than LRU: when full, the newcomer goes and what came first stays."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._sizes: dict[bytes, int] = {}

    @property
    def total(self) -> int:
        return sum(self._sizes.values())

    def __contains__(self, key: object) -> bool:
        return key in self._sizes

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._sizes)

    def size(self, key: bytes) -> int:
        return self._sizes[key]

    def admit(self, key: bytes, size: int) -> list[bytes]:
        self._sizes[key] = size
        if self.total <= self.capacity:
            return []
        del self._sizes[key]
        return [key]

    def hit(self, key: bytes) -> None:
        pass

    def remove(self, key: bytes) -> None:
        self._sizes.pop(key, None)

    def clear(self) -> None:
        self._sizes.clear()


def test_the_eviction_policy_chooses_what_goes(tmp_path: Path) -> None:
    """The seam: the cache deletes the files its policy names (here the newcomer), not the
    least recently used."""
    a, b, c = chunks(3)
    one = len(pack_bytes([a]))
    policy: Callable[[int], EvictionPolicy] = KeepFirst
    cache = ChunkCache(tmp_path, 2 * one, policy)
    cache.scan()
    put_each(cache, [a, b])
    assert cache.get_chunks([b[0]]) == {b[0]: b[1]}
    put_each(cache, [c])
    assert cache.has(a[0]) and cache.has(b[0]) and not cache.has(c[0])
    assert len(packs(tmp_path)) == 2 and cache.used_bytes <= 2 * one


def test_scan_restores_index_in_mtime_order(tmp_path: Path) -> None:
    first = ChunkCache(tmp_path, 1 << 20)
    first.scan()
    items = chunks(4)
    put_each(first, items)
    by_chunk = {p.read_bytes()[-1000:]: p for p in packs(tmp_path)}
    for age, (_, data) in enumerate(reversed(items)):  # items[0] oldest
        t = 1_000_000 - age * 1000
        os.utime(by_chunk[data], (t, t))
    (tmp_path / "packs" / "ab").mkdir(exist_ok=True)
    junk = tmp_path / "packs" / "ab" / "not-a-hash"
    junk.write_bytes(b"x")
    stale = tmp_path / "packs" / "ab" / ".tmp-0123456789abcdef"
    stale.write_bytes(b"left by a crashed writer")
    garbled = tmp_path / "packs" / "ab" / hash_to_string(bytes([0xAB] * 32))
    garbled.write_bytes(b"ARKPACK1 but then nonsense")
    one = len(pack_bytes([items[0]]))
    second = ChunkCache(tmp_path, 2 * one)  # smaller: the scan trims the two oldest
    second.scan()
    assert not stale.exists() and not garbled.exists()
    assert second.used_bytes == 2 * one
    assert [second.has(h) for h, _ in items] == [False, False, True, True]
    assert not by_chunk[items[0][1]].exists()
    assert second.get_chunks([items[3][0]]) == {items[3][0]: items[3][1]}


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


def test_object_blocks_round_trip_survive_a_rescan_and_bad_ones_are_dropped(
    tmp_path: Path,
) -> None:
    cache = ChunkCache(tmp_path, 1 << 20)
    cache.scan()
    ids = [bytes([i]) * 32 for i in range(3)]
    blocks = [random.Random(i).randbytes(5000) for i in range(3)]
    for block_id, data in zip(ids, blocks, strict=True):
        cache.put_block(block_id, data)
    assert cache.get_block(ids[0]) == blocks[0]
    assert cache.get_block(b"\xff" * 32) is None

    again = ChunkCache(tmp_path, 1 << 20)  # a remount: the scan finds the blocks
    again.scan()
    assert all(again.has_block(b) for b in ids)
    path = path_of(tmp_path, ids[1], "blocks")
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 1
    path.write_bytes(bytes(damaged))
    assert again.get_block(ids[1]) is None
    assert again.bad_files == 1 and not path.exists() and not again.has_block(ids[1])

    moved = path_of(tmp_path, ids[0], "blocks").read_bytes()
    path_of(tmp_path, ids[2], "blocks").write_bytes(moved)  # another block's (valid) file
    assert again.get_block(ids[2]) is None  # its digest covers the id, not just the bytes

    again.drop_blocks([ids[0]])
    assert not again.has_block(ids[0])
    assert not path_of(tmp_path, ids[0], "blocks").exists()
