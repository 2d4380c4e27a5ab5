"""Metadata over the small-file tree: `find | wc -l` and `ls -lR` through the mount
against the same commands on the local tree.

First: a fresh mount with an empty cache directory, page cache dropped. Warm: a remount
on the cache directory the first one filled (its manifest is on disk). The local tree is
timed cold (page cache, dentries and inodes dropped) and warm (right after).
"""

import subprocess
import time
from pathlib import Path

from benchmarks.common import METADATA, Figure, compare, drop_caches, interleaved, value
from benchmarks.mountbench import Archive

COMMANDS = {"find": "find {} | wc -l", "ls -lR": "ls -lR {} > /dev/null"}
CACHE = "metadata"


def timed(command: str, tree: Path) -> tuple[float, str]:
    """Seconds a shell command took on tree, and what it printed."""
    start = time.perf_counter()
    out = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command.format(f"'{tree}'")],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    return time.perf_counter() - start, out.stdout.strip()


def bench_metadata(archive: Archive) -> list[Figure]:
    """Median seconds of each command on a first mount, a warm remount and the local tree."""
    tree = archive.corpora.tree
    expected = timed(COMMANDS["find"], tree)[1]

    def on_mount(command: str, fresh: bool) -> dict[str, float]:
        if fresh:
            drop_caches()
        with archive.mount(CACHE, fresh=fresh) as mount:
            seconds, printed = timed(command, archive.in_mount(mount, tree))
        if command.startswith("find") and printed != expected:
            raise RuntimeError(f"find counted {printed} entries in the mount, {expected} locally")
        return {"s": seconds}

    def on_local(command: str) -> dict[str, float]:
        drop_caches()
        cold = timed(command, tree)[0]
        return {"cold": cold, "warm": timed(command, tree)[0]}

    sides = {}
    for name, command in COMMANDS.items():
        sides[f"first {name}"] = lambda c=command: on_mount(c, fresh=True)
        sides[f"warm {name}"] = lambda c=command: on_mount(c, fresh=False)
        sides[f"local {name}"] = lambda c=command: on_local(c)
    got = interleaved(sides)
    figures = []
    for name in COMMANDS:
        local = got[f"local {name}"]
        figures += [
            compare(
                f"{name}, first mount (empty cache)",
                "s",
                value(got[f"first {name}"], "s"),
                value(local, "cold"),
                "local tree, cold",
                "<= 5" if name == "find" else None,
                METADATA,
            ),
            compare(
                f"{name}, warm remount (same cache)",
                "s",
                value(got[f"warm {name}"], "s"),
                value(local, "warm"),
                "local tree, warm",
                None,
                METADATA,
            ),
        ]
    return figures
