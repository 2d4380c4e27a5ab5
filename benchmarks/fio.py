"""Random reads with fio through the mount (chunk cache warm) against the local file.

The page cache is dropped before every fio run on either side, so the mount serves from
its chunk cache and the local file from the disk. Buffered reads (--direct=0), 4 jobs,
time-based; IOPS and the p50 and p99 completion latencies from fio's JSON.
"""

import json
import subprocess
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
from benchmarks.mountbench import RSS_TARGET, WARM_CACHE, Archive, fill_cache

SECONDS = 2 if QUICK else 10
BLOCKS = {"4 KiB": "4k", "1 MiB": "1m"}


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
    """fio 4 KiB and 1 MiB random reads of the random file, one warm mount for all runs."""
    fill_cache(archive, local, WARM_CACHE)
    with archive.mount(WARM_CACHE, fresh=False) as mount:
        path = archive.in_mount(mount, local)
        sides = {}
        for label, block in BLOCKS.items():
            sides[f"mount {label}"] = lambda block=block: fio(path, block)
            sides[f"local {label}"] = lambda block=block: fio(local, block)
        got = interleaved(sides)
        peak = mount.peak_rss() / MIB
    figures = []
    for label in BLOCKS:
        ours, local_side = got[f"mount {label}"], got[f"local {label}"]
        targets = {"iops": ">= 0.3" if label == "4 KiB" else None, "p50": None, "p99": None}
        for key, target in targets.items():
            figures.append(
                compare(
                    f"fio randread {label}" + ("" if key == "iops" else f", {key} latency"),
                    "IOPS" if key == "iops" else "µs",
                    value(ours, key),
                    value(local_side, key),
                    "same job on the local file",
                    target,
                    RANDOM,
                )
            )
    figures.append(compare("mount peak RSS, fio", "MiB", peak, None, "", RSS_TARGET, MEMORY))
    return figures
