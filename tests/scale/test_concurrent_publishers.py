"""Concurrent publishers of the same bytes store them once: each builds the same xorbs
from them (xorb_cuts.py), and a xorb named by its hash is stored once."""

import random
from pathlib import Path

import pytest

from tests.support.archive import MIB
from tests.support.concurrent import chunk_census, start_publish
from tests.support.server import Server
from tests.support.services import ScaledPlace

pytestmark = pytest.mark.slow
PUBLISHERS = 4
SHARED = 40 * MIB  # in 5 files, the same in every tree
OWN = MIB  # a file of each tree's own, met first


def stored_chunk_bytes(place: ScaledPlace) -> tuple[int, int]:
    """(chunk bytes in every xorb, chunk bytes counting each distinct chunk once)."""
    held, size = chunk_census(place)
    return sum(size[c] * k for c, k in held.items()), sum(size.values())


def test_four_concurrent_publishers_store_shared_bytes_about_once(
    scaled_place: ScaledPlace, tmp_path: Path
) -> None:
    rng = random.Random(72)
    shared = [rng.randbytes(SHARED // 5) for _ in range(5)]
    trees = []
    for p in range(PUBLISHERS):
        tree = tmp_path / f"tree{p}"
        tree.mkdir()
        (tree / "a-own.bin").write_bytes(random.Random(p).randbytes(OWN))
        for i, data in enumerate(shared):
            (tree / f"shared{i}.bin").write_bytes(data)
        trees.append(tree)
    (tmp_path / "tokens").write_text("writer write\n")
    extra = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(scaled_place.location, *scaled_place.serve_args()[2:], *extra) as server:
        procs = [start_publish(tree, i, server.url) for i, tree in enumerate(trees)]
        for proc in procs:
            _, err = proc.communicate(timeout=600)
            assert proc.returncode == 0, err.decode()
    total, distinct = stored_chunk_bytes(scaled_place)
    print(f"{total / MIB:.1f} MiB of chunks stored, {distinct / MIB:.1f} MiB distinct")
    assert distinct >= SHARED + PUBLISHERS * OWN * 0.9
    # 4 copies of the shared bytes before (each publisher's xorbs differed); now what is
    # stored twice is at most the xorbs in which the trees diverge, about 16 MiB each
    assert total <= distinct + PUBLISHERS * 24 * MIB < PUBLISHERS * SHARED
