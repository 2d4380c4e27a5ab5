"""The prefetch policy on its own: access patterns in, claims out; invariants over many."""

from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arkfs.mount.data.prefetch import PREFETCH_MAX, PREFETCH_MIN, SEQ_SLACK, Prefetcher

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

MIB = 1024 * 1024


def sequential_claims(p: Prefetcher, size: int, step: int, start: int = 0) -> list[tuple[int, int]]:
    """Read [start, size) in step-sized reads, granting every claim whole; the claims."""
    claims = []
    for offset in range(start, size, step):
        claim = p.on_read("s", offset, min(offset + step, size), size)
        if claim is not None:
            claims.append(claim)
            p.claimed("s", claim[1])
    return claims


def test_the_window_doubles_to_its_maximum_and_stays_ahead() -> None:
    p = Prefetcher()
    claims = sequential_claims(p, 200 * MIB, MIB)
    ends = [stop for _, stop in claims]
    # Read 2 ends at 2 MiB with a 1 MiB window, then 2, 4, ..., 32 MiB, then 32 MiB.
    windows = [stop - (n + 2) * MIB for n, stop in enumerate(ends[:6])]
    assert windows == [PREFETCH_MIN << k for k in range(6)] and windows[-1] == PREFETCH_MAX
    assert all(a[1] == b[0] for a, b in pairwise(claims))  # contiguous
    assert ends[-1] == 200 * MIB  # up to EOF, never past it


def test_a_random_read_resets_the_window() -> None:
    p = Prefetcher()
    sequential_claims(p, 40 * MIB, MIB)
    assert p.on_read("s", 100 * MIB, 101 * MIB, 200 * MIB) is None
    assert p.on_read("s", 101 * MIB, 102 * MIB, 200 * MIB) == (102 * MIB, 103 * MIB)


def test_strides_beyond_the_slack_are_random() -> None:
    p = Prefetcher()
    size, step = 100 * MIB, 64 * 1024
    far = [p.on_read("s", o, o + step, size) for o in range(0, size - step, step + SEQ_SLACK + 1)]
    assert far and all(c is None for c in far)
    near = [p.on_read("t", o, o + step, size) for o in range(0, size - step, step + SEQ_SLACK)]
    assert sum(c is not None for c in near) > 1


def test_re_reads_and_out_of_order_requests_change_nothing() -> None:
    p = Prefetcher()
    size = 100 * MIB
    assert p.on_read("s", 0, MIB, size) is None
    assert p.on_read("s", MIB, 2 * MIB, size) == (2 * MIB, 3 * MIB)  # window 1 MiB
    p.claimed("s", 3 * MIB)
    assert p.on_read("s", MIB, MIB + 4096, size) is None  # a re-read, within the slack
    assert p.on_read("s", 2 * MIB, 3 * MIB, size) == (3 * MIB, 5 * MIB)  # window 2 MiB


def test_streams_are_bounded_and_forgotten_ones_start_afresh() -> None:
    p = Prefetcher(streams=3)
    for s in range(10):
        p.on_read(s, 0, MIB, 100 * MIB)
        assert len(p) <= 3
    assert p.on_read(0, MIB, 2 * MIB, 100 * MIB) is None  # stream 0 was forgotten: a first read
    assert p.on_read(9, MIB, 2 * MIB, 100 * MIB) is not None
    p.end(9)
    p.end(9)
    assert len(p) == 2


@dataclass
class Model:
    """What a test knows of one stream: where its run goes next, how far claims got, and
    how many sequential reads the run has had."""

    next: int
    frontier: int
    reads: int = 0


SEQ, SKIP, BACK, JUMP = "sequential", "skip ahead", "step back", "jump"
step = st.tuples(
    st.integers(0, 3),  # stream
    st.sampled_from([SEQ, SEQ, SEQ, SKIP, BACK, JUMP]),
    st.integers(1, 2 * MIB),  # read length
    st.integers(0, 2**40),  # distance of a skip, step back or jump
    st.sampled_from(["all", "more", "part", "none", "behind"]),  # how much of a claim is granted
    st.integers(0, 2**40),  # how much, for "more", "part" and "behind"
)


@given(st.integers(1, 96 * MIB), st.lists(step, max_size=120))
def test_invariants_over_access_patterns(size: int, steps: list[tuple]) -> None:
    p = Prefetcher()
    model: dict[int, Model] = {}
    for stream, kind, length, distance, grant, amount in steps:
        m = model.get(stream)
        base = m.next if m else 0
        offset = {
            SEQ: base,
            SKIP: base + 1 + distance % SEQ_SLACK,
            BACK: base - 1 - distance % SEQ_SLACK,
            JUMP: distance % size,
        }[kind]
        end = min(offset + length, size)
        if not 0 <= offset < end:
            continue
        claim = p.on_read(stream, offset, end, size)
        assert len(p) <= 256
        sequential = m is not None and -SEQ_SLACK <= offset - m.next <= SEQ_SLACK
        if not sequential or m is None:
            model[stream] = Model(end, end)
            assert claim is None  # a first read or a random one: no claim, window reset
            continue
        if offset < m.next:
            assert claim is None  # a re-read or an out-of-order request changes nothing
            continue
        m.next, m.reads, m.frontier = end, m.reads + 1, max(m.frontier, end)
        window = min(PREFETCH_MIN << min(m.reads - 1, 10), PREFETCH_MAX)
        if claim is None:
            assert m.frontier >= min(end + window // 2, size)  # enough is claimed ahead
            continue
        start, stop = claim
        assert start == m.frontier  # contiguous: no gap, nothing claimed twice
        assert start < stop <= size  # never empty, never past EOF
        assert stop == min(end + window, size)  # the window: doubled, capped, or reset
        got = {
            "all": stop,
            "more": min(stop + amount % (2 * MIB), size),  # to the end of a chunk
            "part": start + amount % (stop - start),
            "none": start,
            "behind": max(start - amount % (64 * 1024), 0),  # nothing, from a chunk's start
        }[grant]
        p.claimed(stream, got)
        m.frontier = max(m.frontier, got)
