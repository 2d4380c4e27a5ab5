"""Random reads with fio through the mount against a trivial pyfuse3 filesystem serving
the file from memory (the floor of any pyfuse3 filesystem) and against the local file.

The page cache is dropped before every fio run on every side, so the mount serves from
its chunk cache ("cached chunks": a full chunk cache) or from the server ("cold": a fresh
mount with an empty chunk cache for each run), the trivial filesystem from memory and the
local file from the disk. Buffered reads (--direct=0), 4 jobs, time-based; IOPS and the
p50 and p99 completion latencies from fio's JSON.

What the 4 KiB figure measures (requests counted on both sides): fio hints
POSIX_FADV_RANDOM, so each page-cache miss reaches a FUSE filesystem as one 4 KiB read.
The trivial FS answered 322,477 of them in a 10 s run (the file has 262,144 pages); the
rest of its ~950,000 reads were page-cache hits, as on the local file. The figure is how
fast a filesystem fills the page cache under random reads, which is fair to compare: the
trivial FS has no page-cache advantage, only its bytes in memory. arkfs hands the kernel
the whole pages of each chunk a miss loads (FUSE_NOTIFY_STORE, mount/pages.py), so it
needs about one FUSE read per chunk: about 25,000 per run.
"""

import json
import subprocess
from functools import partial
from pathlib import Path

from benchmarks.common import (
    MEMORY,
    MIB,
    QUICK,
    RANDOM,
    Figure,
    compare,
    drop_caches,
    interleaved,
    value,
)
from benchmarks.mountbench import RSS_TARGET, WARM_CACHE, Archive, fill_cache, trivial_mount

SECONDS = 2 if QUICK else 10
BLOCKS = {"4 KiB": "4k", "1 MiB": "1m"}
COLD_CACHE = "fio-cold"
TRIVIAL = "same job on a trivial pyfuse3 FS, from memory"
# Issue 31: 1 MiB random reads of cached chunks near a local file's rate and tail.
LOCAL_TARGETS = {("1 MiB", "iops"): ">= 0.8", ("1 MiB", "p99"): "<= 2.0"}


def fio(path: Path, block: str) -> dict[str, float]:
    """IOPS and p50/p99 latency (µs) of a time-based buffered random-read job on path."""
    drop_caches()
    out = subprocess.run(
        [
            "fio",
            "--name=randread",
            f"--filename={str(path).replace(':', chr(92) + ':')}",  # fio splits names at ':'
            "--readonly",
            "--rw=randread",
            f"--bs={block}",
            "--numjobs=4",
            "--direct=0",
            "--ioengine=psync",
            "--time_based",
            f"--runtime={SECONDS}",
            "--group_reporting",
            "--output-format=json",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=SECONDS + 120,
    )
    read = json.loads(out.stdout)["jobs"][0]["read"]
    if read["io_bytes"] == 0:
        raise RuntimeError(f"fio read nothing from {path}")
    percentiles = read["clat_ns"]["percentile"]
    return {
        "iops": read["iops"],
        "p50": percentiles["50.000000"] / 1000,
        "p99": percentiles["99.000000"] / 1000,
    }


def bench_fio(archive: Archive, local: Path) -> list[Figure]:
    """fio 4 KiB and 1 MiB random reads of the random file on one mount with its chunks
    cached; 4 KiB also on a cold mount and on the trivial FS."""
    fill_cache(archive, local, WARM_CACHE)
    peaks = {"cached": 0.0, "cold": 0.0}

    def cold() -> dict[str, float]:
        with archive.mount(COLD_CACHE) as mount:
            out = fio(archive.in_mount(mount, local), BLOCKS["4 KiB"])
            peaks["cold"] = max(peaks["cold"], mount.peak_rss() / MIB)
            return out

    with archive.mount(WARM_CACHE, fresh=False) as mount, trivial_mount(local) as trivial:
        path = archive.in_mount(mount, local)
        sides = {"cold 4 KiB": cold, "trivial 4 KiB": lambda: fio(trivial, BLOCKS["4 KiB"])}
        for label, block in BLOCKS.items():
            sides[f"mount {label}"] = partial(fio, path, block)
            sides[f"local {label}"] = partial(fio, local, block)
        got = interleaved(sides)
        peaks["cached"] = mount.peak_rss() / MIB
    figures = [
        compare(
            f"fio randread 4 KiB, {kind}",
            "IOPS",
            value(got[side], "iops"),
            value(got["trivial 4 KiB"], "iops"),
            TRIVIAL,
            target,
            RANDOM,
        )
        for kind, side, target in (
            ("cached chunks", "mount 4 KiB", ">= 0.7"),
            ("cold (empty chunk cache)", "cold 4 KiB", None),
        )
    ]
    for label in BLOCKS:
        ours, local_side = got[f"mount {label}"], got[f"local {label}"]
        for key in ("iops", "p50", "p99"):
            figures.append(
                compare(
                    f"fio randread {label}, cached chunks"
                    + ("" if key == "iops" else f", {key} latency"),
                    "IOPS" if key == "iops" else "µs",
                    value(ours, key),
                    value(local_side, key),
                    "same job on the local file",
                    LOCAL_TARGETS.get((label, key)),
                    RANDOM,
                )
            )
    for kind, peak in peaks.items():
        figures.append(
            compare(f"mount peak RSS, fio, {kind}", "MiB", peak, None, "", RSS_TARGET, MEMORY)
        )
    return figures
