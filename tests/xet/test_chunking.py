"""Content-defined chunking: the C scanner against the spec's pseudo-code, fed in any pieces."""

import itertools
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import arkfs.xet._gearcut as _gearcut
from arkfs.xet.chunking import _TABLE_BYTES, Chunker, chunk_stream, reference_chunk_lengths
from arkfs.xet.constants import GEAR_MASK, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from tests.support.corpus import corpus

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def lengths_fed_in(data: bytes, piece: int) -> list[int]:
    pieces = (data[i : i + piece] for i in range(0, len(data), piece))
    return [len(c) for c in chunk_stream(pieces)]


def test_matches_reference_on_corpus() -> None:
    for name, data in corpus().items():
        data = data[:1_500_000]  # the reference is pure Python: keep it quick
        expected = reference_chunk_lengths(data)
        for piece in (1 << 30, 65536, 8191, 1):
            if piece == 1 and len(data) > 300_000:
                continue
            assert lengths_fed_in(data, piece) == expected, (name, piece)


def test_one_value_cuts_at_max_size() -> None:
    data = b"\x07" * 1_000_000
    lengths = lengths_fed_in(data, 1 << 20)
    assert lengths == [MAX_CHUNK_SIZE] * 7 + [1_000_000 - 7 * MAX_CHUNK_SIZE]


def test_small_inputs_are_one_chunk() -> None:
    for n in (1, 100, MIN_CHUNK_SIZE - 1, MIN_CHUNK_SIZE):
        assert lengths_fed_in(b"\x01" * n, 4096) == [n]
    assert list(chunk_stream([b""])) == []


def test_chunks_rebuild_the_input_and_respect_bounds() -> None:
    data = random.Random(5).randbytes(3_000_000)
    chunks = list(chunk_stream([data[:1234567], data[1234567:]]))
    assert b"".join(chunks) == data
    assert all(MIN_CHUNK_SIZE <= len(c) <= MAX_CHUNK_SIZE for c in chunks[:-1])


def test_chunker_keeps_only_the_open_chunk() -> None:
    chunker = Chunker()
    rng = random.Random(9)
    for _ in range(64):
        chunker.feed(rng.randbytes(1 << 20))
        assert sum(len(p) for p in chunker._open) < MAX_CHUNK_SIZE


@settings(max_examples=40)
@given(
    seed=st.integers(0, 2**32),
    size=st.integers(0, 400_000),
    cuts=st.lists(st.integers(0, 400_000), max_size=8),
)
def test_any_split_gives_reference_boundaries(seed: int, size: int, cuts: list[int]) -> None:
    data = random.Random(seed).randbytes(size)
    bounds = sorted({0, size, *(c for c in cuts if c <= size)})
    pieces = [data[a:b] for a, b in itertools.pairwise(bounds)]
    assert [len(c) for c in chunk_stream(pieces)] == reference_chunk_lengths(data)


def test_interleaved_scan_agrees_with_the_one_lane_scan() -> None:
    # Pieces of 16 KiB and more are hashed in four interleaved stretches; smaller ones in one.
    rng = random.Random(11)
    data = b"".join(
        rng.randbytes(rng.randrange(1, 300_000)) if k % 2 else bytes([k]) * rng.randrange(1, 90_000)
        for k in range(40)
    )
    assert lengths_fed_in(data, len(data)) == lengths_fed_in(data, 8191)
    assert lengths_fed_in(data, 3 * (1 << 20) + 17) == lengths_fed_in(data, 8191)


def test_every_position_a_candidate_cuts_at_min_size() -> None:
    # mask 0 passes every window: 3 MiB of candidates, each chunk ends at its first allowed byte.
    data = random.Random(12).randbytes(3 << 20)
    cuts, _, pos = _gearcut.scan(_TABLE_BYTES, data, 0, 100, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, 0)
    first = MIN_CHUNK_SIZE - 100
    assert cuts == list(range(first, len(data) + 1, MIN_CHUNK_SIZE))
    assert pos == len(data) - cuts[-1]


def test_min_size_below_the_window_is_refused() -> None:
    with pytest.raises(ValueError, match="64 <= min_size"):
        _gearcut.scan(_TABLE_BYTES, b"abc", 0, 0, 63, MAX_CHUNK_SIZE, GEAR_MASK)
