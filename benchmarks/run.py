"""`make bench`: every benchmark in one run; the table on stdout and in results/.

Each figure compares arkfs with a reference measured in the same run on the same data.
Corpora are built from fixed seeds under $ARKFS_BENCH_DIR (default: a temporary
directory; set it to keep the corpora between runs). ARKFS_BENCH_QUICK=1 shrinks them.
ARKFS_BENCH_ONLY=name[,name] runs only those benchmarks (the names of WORKDIR_BENCHES and
MOUNT_BENCHES; those in ON_REQUEST run only when named). A benchmark that fails is
reported as missing, with its error; the others still run. Each figure keeps the highest
load average seen around its benchmark.
"""

import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from unittest.mock import patch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import corpora
from benchmarks.common import Failed, Figure, attempt, backed_free_memory
from benchmarks.corpora import Corpora
from benchmarks.fio import bench_fio
from benchmarks.hashing import bench_hash
from benchmarks.intake import bench_intake
from benchmarks.metadata import bench_metadata
from benchmarks.mountbench import (
    WARM_CACHE,
    Archive,
    bench_cold,
    bench_latency,
    bench_warm_hot,
    published,
)
from benchmarks.publish import bench_publish
from benchmarks.reach import bench_reach
from benchmarks.report import print_table, write_chart, write_json, write_markdown
from benchmarks.republish import bench_republish
from benchmarks.s3read import bench_s3_cold
from benchmarks.scale import bench_scale

# Benchmarks that build what they need under the work directory (the 1,000,000-file
# archive registers here: "scale": bench_scale).
WORKDIR_BENCHES: dict[str, Callable[[Path, Corpora], list[Figure]]] = {
    "hash": lambda _, data: bench_hash(data.random),
    "ingest": lambda workdir, _: bench_publish(workdir),
    "scale": lambda workdir, _: bench_scale(workdir),
    "republish": lambda workdir, _: bench_republish(workdir),
    "intake": lambda workdir, _: bench_intake(workdir),
}
ON_REQUEST = {"intake"}  # too long for every run (issue 28's ten rounds: 25 GiB through S3)
# Benchmarks through mounts of the corpora, published once on one server.
MOUNT_BENCHES: dict[str, Callable[[Archive], list[Figure]]] = {
    "cold-random": lambda a: bench_cold(a, a.corpora.random, "random", WARM_CACHE),
    "cold-float32": lambda a: bench_cold(a, a.corpora.floats, "float32", "floats-cache"),
    "warm-hot": lambda a: bench_warm_hot(a, a.corpora.random),
    "fio": lambda a: bench_fio(a, a.corpora.random),
    "latency": lambda a: bench_latency(a, a.corpora.random),
    "metadata": bench_metadata,
    "s3": lambda a: bench_s3_cold(a, a.corpora.random),
    "reach": lambda a: bench_reach(a, a.corpora.random),
}
ONLY_ENV = "ARKFS_BENCH_ONLY"


def chosen() -> set[str]:
    """The benchmarks to run: $ARKFS_BENCH_ONLY's names, else all of them."""
    known = [*WORKDIR_BENCHES, *MOUNT_BENCHES]
    only = os.environ.get(ONLY_ENV)
    if not only:
        return set(known) - ON_REQUEST
    names = {n.strip() for n in only.split(",") if n.strip()}
    unknown = sorted(names - set(known))
    if unknown:
        raise SystemExit(f"{ONLY_ENV}: unknown benchmark {unknown[0]!r} ({', '.join(known)})")
    return names


def missing(name: str, failure: Failed) -> list[Figure]:
    """The one line of a benchmark that could not run."""
    return [Figure(name, "", None, None, "", None, "failed", failure.why)]


def run(name: str, bench: Callable[[], list[Figure]]) -> list[Figure]:
    """A benchmark's figures, or one missing figure saying why it failed; each with the
    highest 1-minute load average seen before and after it."""
    started, load = time.perf_counter(), os.getloadavg()[0]
    print(f"running {name} (load {load:.1f})", flush=True)
    got = attempt(name, bench)
    figures = missing(name, got) if isinstance(got, Failed) else got
    load = max(load, os.getloadavg()[0])
    print(f"  {name}: {time.perf_counter() - started:.0f} s (load {load:.1f})", flush=True)
    for figure in figures:
        figure.load = load
    return figures


def main() -> int:
    """Run everything; exit 0 even when a target is missed (the report says so)."""
    # SIGTERM unwinds like Ctrl-C: every mount and server is stopped, temp dirs removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    names = chosen()
    started = time.perf_counter()
    load = os.getloadavg()
    keep = os.environ.get("ARKFS_BENCH_DIR")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="arkfs-bench-") as tmp, ExitStack() as stack:
        workdir = Path(keep) if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        # Every run starts as a new user's would, with no tree index or archive cache left
        # by an earlier run (~/.local/state had gathered 2.3 GB of bench indexes).
        # Only for the run: the chart drawn after it would put matplotlib's font cache in
        # the removed temp dir, which left a new one behind.
        scratch_homes = {"XDG_STATE_HOME": f"{tmp}/state", "XDG_CACHE_HOME": f"{tmp}/cache"}
        stack.enter_context(patch.dict(os.environ, scratch_homes))
        memory = stack.enter_context(backed_free_memory())
        print(memory, flush=True)
        print(f"corpora under {workdir}", flush=True)
        data = attempt("corpora", lambda: corpora.build(workdir))
        print(f"  corpora ready after {time.perf_counter() - started:.0f} s", flush=True)
        if isinstance(data, Failed):
            figures += missing("all benchmarks", data)
        else:
            for name, bench in WORKDIR_BENCHES.items():
                if name in names:
                    figures += run(name, partial(bench, workdir, data))
            mounts = [(n, b) for n, b in MOUNT_BENCHES.items() if n in names]
            if mounts:
                print("publishing the corpora for the mount benchmarks", flush=True)
                archive = attempt("publish", lambda: stack.enter_context(published(workdir, data)))
            for name, mount_bench in mounts:
                if isinstance(archive, Failed):
                    figures += missing(name, archive)
                else:
                    figures += run(name, partial(mount_bench, archive))
    seconds = time.perf_counter() - started
    record = {
        "seconds": seconds,
        "load_before": load,
        "load_after": os.getloadavg(),
        "free_memory": memory,
    }
    print()
    print_table(figures)
    print(f"\nthe run took {seconds / 60:.1f} min")
    for path in (write_json(figures, record), write_markdown(figures, record)):
        print(f"wrote {path}")
    chart = attempt("chart", lambda: write_chart(figures))
    print(chart.why if isinstance(chart, Failed) else f"wrote {chart}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
