"""Scale: a 1,000,000-file archive against the 100,000-file tree of the same shape.

Both trees are built here, with benchmarks.corpora's layout (three levels of ten
directories, 100 files per leaf directory) and its log-uniform sizes divided by SHRINK, so
the 1M tree stays small on disk (about 1 GB of data) and both trees draw their sizes from
the same distribution: per-file costs compare fairly. Each tree is published to
`arkfs serve` (the peak RSS of the server and of the publish are taken as it goes) and to an
embedded store, then mounted from the server with an empty cache and walked with `find`.
"""

import hashlib
import os
import random
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

from benchmarks.common import (
    ARKFS,
    INGEST,
    MEMORY,
    METADATA,
    MIB,
    QUICK,
    Figure,
    arkfs_mount,
    arkfs_server,
    drop_caches,
    interleaved,
)
from benchmarks.corpora import tree_layout
from benchmarks.metadata import timed
from tests.support.peak import run_with_peak_rss

SHRINK = 16  # sizes of the 100k tree / SHRINK: log-uniform in [64 B, 4 KiB)
SMALL, LARGE = (2_000, 20_000) if QUICK else (100_000, 1_000_000)
SEED = 1_000_000
ARK = "ark:99999/scale"
WRITE, READ = "bench-write", "bench-read"


def scale_tree(root: Path, files: int) -> Path:
    """Write the tree of files under root, unless its stamp says it is there already."""
    layout = [(rel, size // SHRINK, offset) for rel, size, offset in tree_layout(files, SEED)]
    stamp = root.with_name(root.name + ".layout")
    digest = hashlib.sha256(repr(layout).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return root
    shutil.rmtree(root, ignore_errors=True)
    buffer = random.Random(SEED).randbytes(16 * MIB + 64 * 1024)
    made: set[str] = set()
    for rel, size, offset in layout:
        parent = os.path.dirname(rel)
        if parent not in made:
            (root / parent).mkdir(parents=True, exist_ok=True)
            made.add(parent)
        with open(root / rel, "wb") as f:
            f.write(buffer[offset : offset + size])
    stamp.write_text(digest)
    return root


def _publish(tree: Path, *target: str) -> tuple[float, float]:
    """Seconds `arkfs publish` took to publish tree as ARK to target, from a cold page
    cache (so both trees are read from the disk alike), and its own peak RSS in MiB."""
    drop_caches()
    start = time.perf_counter()
    command = [ARKFS, "publish", str(tree), "--ark", ARK, *target]
    code, _, peak = run_with_peak_rss(command, os.environ | {"ARKFS_TOKEN": WRITE})
    if code:
        raise subprocess.CalledProcessError(code, command)
    return time.perf_counter() - start, peak / MIB


def _info_bytes(url: str, accept: str) -> float:
    """Bytes of the archive root's ?info reply in the type accept names."""
    headers = {"Authorization": f"Bearer {READ}", "Accept": accept}
    request = urllib.request.Request(f"{url}/{ARK}?info", headers=headers)
    with urllib.request.urlopen(request, timeout=600) as reply:
        return float(len(reply.read()))


def bench_scale(workdir: Path) -> list[Figure]:
    """Publish cost per file, `find` cost per entry and the mount's peak RSS, 1M against
    100k; the peak RSS of the server receiving 1M and of the publish sending it, and the
    size of the root's ?info."""
    trees = {n: scale_tree(workdir / f"scale-{n}", n) for n in (SMALL, LARGE)}
    scratch = Path(tempfile.mkdtemp(prefix="scale-", dir=workdir))
    got: dict[int, dict[str, float]] = {}
    try:
        tokens = scratch / "tokens"
        tokens.write_text(f"{WRITE} write\n{READ} read\n")
        for n, tree in trees.items():
            with arkfs_server(scratch / f"store-{n}", tokens) as server:
                seconds, client_rss = _publish(tree, "--server", server.url)
                got[n] = {
                    "publish_server": seconds / n,
                    "client_rss": client_rss,
                    "server_rss": server.peak_rss() / MIB,
                    "info_bytes": _info_bytes(server.url, "text/plain"),
                    "page_bytes": _info_bytes(server.url, "text/html"),
                }
                expected = str(_count(tree))
                got[n] |= _find(server.url, scratch / f"cache-{n}", expected)
            seconds, _ = _publish(tree, "--store", str(scratch / f"embedded-{n}"))
            got[n]["publish_store"] = seconds / n
            shutil.rmtree(scratch / f"embedded-{n}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    small, large = got[SMALL], got[LARGE]
    label = f"{LARGE:,} files / {SMALL:,}"
    return [
        Figure(
            f"publish to arkfs serve, per file, {label}",
            "ms",
            large["publish_server"] * 1e3,
            small["publish_server"] * 1e3,
            f"{SMALL:,}-file tree",
            "<= 1.5",
            INGEST,
        ),
        Figure(
            f"publish to the embedded store, per file, {label}",
            "ms",
            large["publish_store"] * 1e3,
            small["publish_store"] * 1e3,
            f"{SMALL:,}-file tree",
            "<= 1.5",
            INGEST,
        ),
        Figure(
            f"find, first mount, per entry, {label}",
            "µs",
            large["find_per_entry"] * 1e6,
            small["find_per_entry"] * 1e6,
            f"{SMALL:,}-file tree",
            "<= 1.5",
            METADATA,
            note="median of 3 fresh mounts, page cache dropped",
        ),
        Figure(
            f"mount peak RSS after find, {LARGE:,} files",
            "MiB",
            large["peak_rss"],
            None,
            "",
            "<= 512",
            MEMORY,
        ),
        Figure(
            f"mount peak RSS after find, {SMALL:,} files",
            "MiB",
            small["peak_rss"],
            None,
            "",
            None,
            MEMORY,
        ),
        Figure(
            f"server peak RSS receiving the {LARGE:,}-file publish",
            "MiB",
            large["server_rss"],
            None,
            "",
            "<= 300",  # issue 31
            MEMORY,
        ),
        Figure(
            f"server peak RSS receiving the {SMALL:,}-file publish",
            "MiB",
            small["server_rss"],
            None,
            "",
            None,
            MEMORY,
        ),
        Figure(
            f"publish peak RSS, {LARGE:,} files to arkfs serve",
            "MiB",
            large["client_rss"],
            None,
            "",
            "<= 1024",  # issue 31
            MEMORY,
        ),
        Figure(
            f"publish peak RSS, {SMALL:,} files to arkfs serve",
            "MiB",
            small["client_rss"],
            None,
            "",
            None,
            MEMORY,
        ),
        *(
            Figure(
                f"archive root ?info as {kind}, {label}",
                "MB",
                large[key] / 1e6,
                small[key] / 1e6,
                f"{SMALL:,}-file tree",
                None,
                METADATA,
            )
            for kind, key in (("text", "info_bytes"), ("an HTML landing page", "page_bytes"))
        ),
    ]


def _count(tree: Path) -> int:
    """How many paths find prints under tree, itself included."""
    return 1 + sum(len(dirs) + len(names) for _, dirs, names in os.walk(tree))


def _find(url: str, cache: Path, expected: str) -> dict[str, float]:
    """Median seconds per entry of `find | wc -l` on 3 fresh mounts (page cache dropped),
    and the mount's peak RSS after it (the maximum of the runs)."""

    def once() -> dict[str, float]:
        shutil.rmtree(cache, ignore_errors=True)
        drop_caches()
        with arkfs_mount(url, READ, cache) as mount:
            seconds, printed = timed("find {} | wc -l", mount.path / ARK)
            if printed != expected:
                raise RuntimeError(f"find counted {printed} entries, {expected} locally")
            rss = mount.peak_rss() / MIB
            return {"find_per_entry": seconds / int(expected), "peak_rss": rss}

    result = interleaved({"find": once})["find"]
    if not isinstance(result, dict):
        raise RuntimeError(result.why)
    return result
