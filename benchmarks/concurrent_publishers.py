"""Chunks stored twice by concurrent publishers: 4 `arkfs publish` of trees that share
72 MiB, at once and then in sequence, each to a new bucket and database (SeaweedFS and
PostgreSQL on this machine); prints the chunk bytes held in more than one xorb.

    .venv/bin/python -m benchmarks.concurrent_publishers [--publishers 4] [--shared-mib 72]
"""

import argparse
import random
import shutil
import tempfile
import time
from pathlib import Path

from tests.support.concurrent import chunk_census, start_publish
from tests.support.server import Server
from tests.support.services import PostgreSQL, ScaledPlace, SeaweedFS, new_place, running

MIB = 1 << 20


def trees(root: Path, publishers: int, shared_mib: int) -> list[Path]:
    """publishers trees holding the same shared_mib of random files and 1 MiB of their own."""
    rng = random.Random(72)
    shared = [rng.randbytes(8 * MIB) for _ in range(shared_mib // 8)]
    made = []
    for p in range(publishers):
        tree = root / f"tree{p}"
        tree.mkdir()
        for i, data in enumerate(shared):
            (tree / f"shared{i}.bin").write_bytes(data)
        (tree / "own.bin").write_bytes(random.Random(p).randbytes(MIB))
        made.append(tree)
    return made


def duplicates(place: ScaledPlace) -> tuple[int, int]:
    """(chunk bytes in every xorb, of them the bytes of chunks held in more than one)."""
    held, size = chunk_census(place)
    total = sum(size[c] * k for c, k in held.items())
    return total, sum(size[c] * k for c, k in held.items() if k > 1)


def run(weed: SeaweedFS, pg: PostgreSQL, work: Path, made: list[Path], at_once: bool) -> str:
    place = new_place(weed, pg)
    (work / "tokens").write_text("writer write\n")
    extra = ("--open-read", "--tokens", str(work / "tokens"))
    started = time.monotonic()
    with Server(place.location, *place.serve_args()[2:], *extra) as server:
        procs = []
        for i, tree in enumerate(made):
            proc = start_publish(tree, i, server.url)
            procs.append(proc)
            if not at_once:
                proc.wait()
        for proc in procs:
            _, err = proc.communicate(timeout=1800)
            assert proc.returncode == 0, err.decode()
    seconds = time.monotonic() - started
    total, twice = duplicates(place)
    how = "at once" if at_once else "in sequence"
    return (
        f"{len(made)} publishers {how}: {total / MIB:.1f} MiB of chunks stored, "
        f"{twice / MIB:.1f} MiB ({100 * twice / total:.0f}%) in more than one xorb, {seconds:.0f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--publishers", type=int, default=4)
    parser.add_argument("--shared-mib", type=int, default=72)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="arkfs-concurrent-"))
    try:
        made = trees(work, args.publishers, args.shared_mib)
        with running(SeaweedFS()) as weed, running(PostgreSQL()) as pg:
            for at_once in (True, False):
                print(run(weed, pg, work, made, at_once), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
