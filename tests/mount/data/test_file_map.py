"""File maps from terms and footers: the layout chunk by chunk, and terms that do not fit."""

import random

import pytest

from arkfs.mount.data.file_map import build_map, layout_map
from arkfs.xet.errors import HashMismatchError, ReconstructionError
from arkfs.xet.hashing import chunk_hash, file_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import SerializedXorb, serialize_xorb

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def xorb_of(n: int, seed: int) -> tuple[list[tuple[bytes, bytes]], SerializedXorb]:
    """A serialized xorb of n chunks of 100 to 900 random bytes."""
    rng = random.Random(seed)
    items = []
    for _ in range(n):
        data = rng.randbytes(rng.randint(100, 900))
        items.append((chunk_hash(data), data))
    return items, serialize_xorb(items)


def test_layout_follows_each_term_chunk_by_chunk() -> None:
    (a_items, a), (b_items, b) = xorb_of(6, 1), xorb_of(4, 2)
    footers = {a.hash: a.footer, b.hash: b.footer}
    # A term from the middle of a, one from the start of b, then a from its start again.
    terms = [(a, a_items, 2, 5), (b, b_items, 0, 3), (a, a_items, 0, 2)]
    picked = [(x, items, i) for x, items, s, e in terms for i in range(s, e)]
    sizes = [len(items[i][1]) for _x, items, i in picked]
    size = sum(sizes)
    fh = file_hash([(items[i][0], len(items[i][1])) for _x, items, i in picked])
    xet_terms = [Term(x.hash, s, e, sum(sizes_of(items, s, e))) for x, items, s, e in terms]
    fmap = build_map(fh, size, xet_terms, footers)
    unchecked = layout_map(fh, size, xet_terms, footers)
    for name in ("ends", "hashes", "xorbs", "xorb_of", "index", "packed_start", "packed_end"):
        assert getattr(unchecked, name) == getattr(fmap, name)
    end = 0
    for k, (x, items, i) in enumerate(picked):
        end += len(items[i][1])
        packed = x.footer.packed_ends
        assert fmap.ends[k] == end
        assert fmap.chunk_hash(k) == items[i][0]
        assert fmap.xorbs[fmap.xorb_of[k]] == x.hash and fmap.index[k] == i
        assert (fmap.packed_start[k], fmap.packed_end[k]) == (packed[i - 1] if i else 0, packed[i])
    assert fmap.xorbs == [a.hash, b.hash]


def sizes_of(items: list[tuple[bytes, bytes]], start: int, end: int) -> list[int]:
    return [len(d) for _h, d in items[start:end]]


def test_a_term_past_its_footer_is_refused() -> None:
    items, x = xorb_of(3, 3)
    size = sum(sizes_of(items, 0, 3))
    fh = file_hash([(h, len(d)) for h, d in items])
    past = [Term(x.hash, 1, 4, size)]
    with pytest.raises(IndexError):
        layout_map(fh, size, past, {x.hash: x.footer})
    with pytest.raises(ReconstructionError):
        build_map(fh, size, past, {x.hash: x.footer})


def test_a_map_that_misses_the_file_hash_is_refused() -> None:
    items, x = xorb_of(3, 4)
    size = sum(sizes_of(items, 0, 3))
    other = file_hash([(h, len(d)) for h, d in reversed(items)])
    with pytest.raises(HashMismatchError):
        build_map(other, size, [Term(x.hash, 0, 3, size)], {x.hash: x.footer})
