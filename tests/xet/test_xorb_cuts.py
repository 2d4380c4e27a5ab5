"""Where a publisher cuts its xorbs: content-defined boundaries and file starts, in bytes."""

import random

import pytest

from arkfs.xet.hashing import chunk_hash
from arkfs.xet.xorb_cuts import CUT_MODULUS, FILE_CUT_BYTES, MIN_CUT_BYTES, cuts_before

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def _xorb_sizes(sizes: list[int]) -> list[int]:
    """Bytes of each xorb a stream of one-chunk files of these sizes is cut into."""
    rng = random.Random(7)
    xorbs, held = [], 0
    for size in sizes:
        if cuts_before(chunk_hash(rng.randbytes(32)), held, first_in_file=True):
            xorbs.append(held)
            held = 0
        held += size
    return [*xorbs, held]


def test_tiny_files_fill_xorbs_of_at_least_the_minimum() -> None:
    # 20,000 files of 1 KiB: one chunk each, a boundary hash about every CUT_MODULUS of them
    sizes = _xorb_sizes([1024] * 20_000)
    assert min(sizes[:-1]) >= MIN_CUT_BYTES
    assert len(sizes) <= 20_000 * 1024 // MIN_CUT_BYTES + 1


def test_a_file_starts_a_xorb_once_it_holds_the_file_cut() -> None:
    boundary = next(
        h for h in (chunk_hash(bytes([i])) for i in range(4096))
        if int.from_bytes(h[:8], "little") % CUT_MODULUS == 0
    )  # fmt: skip
    other = next(
        h for h in (chunk_hash(bytes([i, 1])) for i in range(64))
        if int.from_bytes(h[:8], "little") % CUT_MODULUS != 0
    )  # fmt: skip
    assert not cuts_before(boundary, 0, first_in_file=True)  # never an empty xorb
    assert not cuts_before(boundary, MIN_CUT_BYTES - 1, first_in_file=False)
    assert cuts_before(boundary, MIN_CUT_BYTES, first_in_file=False)
    assert not cuts_before(other, FILE_CUT_BYTES - 1, first_in_file=True)
    assert cuts_before(other, FILE_CUT_BYTES, first_in_file=True)
    assert not cuts_before(other, 10 * FILE_CUT_BYTES, first_in_file=False)
