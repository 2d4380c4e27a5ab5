"""Concurrent publishers to one scaled store, and a census of the chunks their xorbs hold
(tests/scale/test_concurrent_publishers.py and benchmarks/concurrent_publishers.py)."""

import subprocess
from collections import Counter
from pathlib import Path

from arkfs.store.scaled import ScaledStore
from tests.support.archive import PERSISTENCE, WHAT, WHO
from tests.support.cli import ARKFS
from tests.support.services import ScaledPlace


def start_publish(tree: Path, i: int, server: str) -> "subprocess.Popen[bytes]":
    """`arkfs publish tree` as ark:12345/x6c{i} to server (token `writer`), not waited for."""
    argv = [
        ARKFS, "publish", str(tree), "--ark", f"ark:12345/x6c{i}", "--server", server,
        "--token", "writer", "--who", WHO, "--what", WHAT, "--persistence", PERSISTENCE,
    ]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def chunk_census(place: ScaledPlace) -> tuple[Counter[bytes], dict[bytes, int]]:
    """How many stored xorbs hold each chunk, and each chunk's size."""
    held: Counter[bytes] = Counter()
    size: dict[bytes, int] = {}
    with ScaledStore.open(place.location, place.endpoint, place.index) as store:
        with store.index.transaction("list the xorbs") as cur:
            cur.execute("SELECT hash FROM xorbs")
            hashes = [bytes(r[0]) for r in cur.fetchall()]
        for h in hashes:
            footer = store.xorb_footer(h)
            for chunk, n in zip(footer.chunk_hashes, footer.chunk_sizes(), strict=True):
                held[chunk] += 1
                size[chunk] = n
    return held, size
