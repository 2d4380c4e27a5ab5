"""`make bench`: every benchmark in one run; the table on stdout and in results/.

Each figure compares arkfs with a reference measured in the same run on the same data.
Corpora are built from fixed seeds under $ARKFS_BENCH_DIR (default: a temporary
directory; set it to keep the corpora between runs). ARKFS_BENCH_QUICK=1 shrinks them.
A benchmark that fails is reported as missing, with its error; the others still run.
"""

import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import corpora
from benchmarks.common import Failed, Figure, attempt
from benchmarks.fio import bench_fio
from benchmarks.hashing import bench_hash
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
from benchmarks.report import print_table, write_chart, write_json, write_markdown
from benchmarks.s3read import bench_s3_cold
from benchmarks.scale import bench_scale

MountBench = Callable[[Archive], list[Figure]]
MOUNT_BENCHES: dict[str, MountBench] = {
    "cold sequential read, random": lambda a: bench_cold(a, a.corpora.random, "random", WARM_CACHE),
    "cold sequential read, float32": lambda a: bench_cold(
        a, a.corpora.floats, "float32", "floats-cache"
    ),
    "warm and hot sequential reads": lambda a: bench_warm_hot(a, a.corpora.random),
    "fio random reads": lambda a: bench_fio(a, a.corpora.random),
    "first byte and read amplification": lambda a: bench_latency(a, a.corpora.random),
    "metadata": bench_metadata,
    "cold sequential read, S3 store": lambda a: bench_s3_cold(a, a.corpora.random),
}


def missing(name: str, failure: Failed) -> list[Figure]:
    """The one line of a benchmark that could not run."""
    return [Figure(name, "", None, None, "", None, "failed", failure.why)]


def run(name: str, bench: Callable[[], list[Figure]]) -> list[Figure]:
    """A benchmark's figures, or one missing figure saying why it failed."""
    started = time.perf_counter()
    print(f"running {name}", flush=True)
    figures = attempt(name, bench)
    print(f"  {name}: {time.perf_counter() - started:.0f} s", flush=True)
    return missing(name, figures) if isinstance(figures, Failed) else figures


def main() -> int:
    """Run everything; exit 0 even when a target is missed (the report says so)."""
    # SIGTERM unwinds like Ctrl-C: every mount and server is stopped, temp dirs removed.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    started = time.perf_counter()
    load = os.getloadavg()
    keep = os.environ.get("ARKFS_BENCH_DIR")
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="arkfs-bench-") as tmp, ExitStack() as stack:
        workdir = Path(keep) if keep else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        print(f"corpora under {workdir}", flush=True)
        data = attempt("corpora", lambda: corpora.build(workdir))
        print(f"  corpora ready after {time.perf_counter() - started:.0f} s", flush=True)
        if isinstance(data, Failed):
            figures += missing("all benchmarks", data)
        else:
            figures += run("hash", lambda: bench_hash(data.random))
            figures += run("ingest", lambda: bench_publish(workdir))
            print("publishing the corpora for the mount benchmarks", flush=True)
            archive = attempt("publish", lambda: stack.enter_context(published(workdir, data)))
            for name, bench in MOUNT_BENCHES.items():
                if isinstance(archive, Failed):
                    figures += missing(name, archive)
                else:
                    figures += run(name, lambda bench=bench: bench(archive))
            figures += run("1,000,000-file archive", lambda: bench_scale(workdir))
    seconds = time.perf_counter() - started
    record = {"seconds": seconds, "load_before": load, "load_after": os.getloadavg()}
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
