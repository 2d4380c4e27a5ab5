"""Metadata over the small-file tree: `find | wc -l` and `ls -lR` through the mount against
the same commands on a trivial pyfuse3 filesystem serving the same tree from memory (the
floor of any pyfuse3 filesystem) and on the local tree.

First: a fresh mount with an empty cache directory, page cache dropped; also with
`--no-xattrs` for `ls -lR`. Warm: a remount on the cache directory the first one filled
(its manifest is on disk). The trivial filesystem runs for the whole benchmark; dentries
and inodes are dropped before each of its runs. The local tree is timed cold (page cache,
dentries and inodes dropped) and warm (right after).
"""

import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from benchmarks.common import METADATA, Figure, compare, drop_caches, interleaved, value
from benchmarks.mountbench import Archive, trivial_mount

COMMANDS = {"find": "find {} | wc -l", "ls -lR": "ls -lR {} > /dev/null"}
CACHE = "metadata"
NO_XATTRS = "--no-xattrs"
TRIVIAL = "trivial tree FS (pyfuse3, from memory)"
TARGETS = {  # against the trivial tree FS (find: issue 31, first mount and warm remount;
    # ls -lR: issue 17), and ls -lR --no-xattrs against the local tree
    "find": "<= 1.2",
    "ls -lR": "<= 1.1",
    NO_XATTRS: "<= 3",
}


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
    """Median seconds of each command on a first mount, a warm remount, the trivial tree
    FS and the local tree."""
    tree = archive.corpora.tree
    expected = timed(COMMANDS["find"], tree)[1]

    def counted(command: str, where: Path) -> dict[str, float]:
        seconds, printed = timed(command, where)
        if command.startswith("find") and printed != expected:
            raise RuntimeError(f"find counted {printed} entries in {where}, {expected} locally")
        return {"s": seconds}

    def on_mount(command: str, fresh: bool, *extra: str) -> dict[str, float]:
        if fresh:
            drop_caches()
        with archive.mount(CACHE, fresh, *extra) as mount:
            return counted(command, archive.in_mount(mount, tree))

    def on_trivial(command: str, root: Path) -> dict[str, float]:
        drop_caches()
        return counted(command, root)

    def on_local(command: str) -> dict[str, float]:
        drop_caches()
        cold = timed(command, tree)[0]
        return {"cold": cold, "warm": timed(command, tree)[0]}

    with trivial_mount(tree) as trivial:
        sides: dict[str, Callable[[], dict[str, float]]] = {}
        for name, command in COMMANDS.items():
            sides[f"first {name}"] = partial(on_mount, command, True)
            sides[f"warm {name}"] = partial(on_mount, command, False)
            sides[f"trivial {name}"] = partial(on_trivial, command, trivial)
            sides[f"local {name}"] = partial(on_local, command)
        sides[NO_XATTRS] = partial(on_mount, COMMANDS["ls -lR"], True, NO_XATTRS)
        got = interleaved(sides)
    figures = []
    for name in COMMANDS:
        first, local = value(got[f"first {name}"], "s"), got[f"local {name}"]
        figures += [
            compare(
                f"{name}, first mount (empty cache)",
                "s",
                first,
                value(got[f"trivial {name}"], "s"),
                TRIVIAL,
                TARGETS[name],
                METADATA,
            ),
            compare(
                f"{name}, first mount (empty cache)",
                "s",
                first,
                value(local, "cold"),
                "local tree, cold",
                None,
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
        if name == "find":  # issue 31: the warm remount too, against the trivial tree FS
            figures.append(
                compare(
                    f"{name}, warm remount (same cache)",
                    "s",
                    value(got[f"warm {name}"], "s"),
                    value(got[f"trivial {name}"], "s"),
                    TRIVIAL,
                    TARGETS[name],
                    METADATA,
                )
            )
    figures.append(
        compare(
            f"ls -lR, first mount with {NO_XATTRS}",
            "s",
            value(got[NO_XATTRS], "s"),
            value(got["local ls -lR"], "cold"),
            "local tree, cold",
            TARGETS[NO_XATTRS],
            METADATA,
        )
    )
    return figures
