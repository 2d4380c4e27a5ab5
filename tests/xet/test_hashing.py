"""Hashes beyond the spec vectors: Merkle tree shape, file hash edge cases, string errors."""

import random

import pytest

from arkfs.xet.constants import INTERNAL_NODE_KEY
from arkfs.xet.errors import HashStringError
from arkfs.xet.hashing import (
    ZERO_HASH,
    chunk_hash,
    file_hash,
    hash_to_string,
    is_global_dedup_eligible,
    keyed_hash,
    merged_hash,
    merkle_root,
    string_to_hash,
    xorb_hash,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def node(tail: int, fill: int) -> bytes:
    """A hash whose last 8 bytes read as tail (little-endian)."""
    return bytes([fill]) * 24 + tail.to_bytes(8, "little")


def test_empty_and_single() -> None:
    assert merkle_root([]) == ZERO_HASH
    h = chunk_hash(b"x")
    assert xorb_hash([(h, 1)]) == h
    assert file_hash([]) == ZERO_HASH  # what hf_xet gives an empty file
    assert file_hash([(h, 1)]) == keyed_hash(bytes(32), h)


def test_two_children_merge_into_one_node() -> None:
    pairs = [(node(1, 1), 10), (node(2, 2), 20)]
    assert merkle_root(pairs) == merged_hash(pairs)[0]
    line = f"{hash_to_string(pairs[0][0])} : 10\n{hash_to_string(pairs[1][0])} : 20\n"
    assert merged_hash(pairs)[0] == keyed_hash(INTERNAL_NODE_KEY, line.encode())


def test_cut_after_third_child_when_its_tail_is_divisible_by_four() -> None:
    # Children 0..2 then a cut (tail of child 2 is 8), so the top level merges two nodes.
    pairs = [(node(1, i), 1) for i in range(5)]
    pairs[2] = (node(8, 2), 1)
    left, right = merged_hash(pairs[:3]), merged_hash(pairs[3:])
    assert merkle_root(pairs) == merged_hash([left, right])[0]


def test_at_most_nine_children_per_node() -> None:
    pairs = [(node(1, i), 1) for i in range(10)]  # no tail divisible by 4: cut at 9
    first, rest = merged_hash(pairs[:9]), merged_hash(pairs[9:])  # a lone child is hashed too
    assert merkle_root(pairs) == merged_hash([first, rest])[0]


def _reference_root(level: list[tuple[bytes, int]]) -> bytes:
    """Root Computation step by step in Python: the rule merkle_root runs in C."""
    while len(level) > 1:
        merged, i = [], 0
        while i < len(level):
            cut = i + min(len(level) - i, 9)
            if len(level) - i > 2:
                for k in range(i + 2, cut):
                    if int.from_bytes(level[k][0][24:], "little") % 4 == 0:
                        cut = k + 1
                        break
            merged.append(merged_hash(level[i:cut]))
            i = cut
        level = merged
    return level[0][0]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 9, 10, 17, 100, 1000, 4097])
def test_merkle_root_matches_the_rule_step_by_step(n: int) -> None:
    rng = random.Random(n)
    pairs = [(rng.randbytes(32), rng.choice([1, 65536, 2**40 - 1])) for _ in range(n)]
    assert merkle_root(pairs) == _reference_root(pairs)


def test_global_dedup_eligibility() -> None:
    assert is_global_dedup_eligible(node(1, 0), first_in_file=True)
    assert not is_global_dedup_eligible(node(1, 0), first_in_file=False)
    assert is_global_dedup_eligible(node(2048, 0), first_in_file=False)


@pytest.mark.parametrize("bad", ["", "00", "g" * 64, "0" * 63, "0" * 65])
def test_bad_hash_strings(bad: str) -> None:
    with pytest.raises(HashStringError):
        string_to_hash(bad)
