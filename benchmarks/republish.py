"""Republishing as archives publish (issue 26): an unchanged tree and one with 10 files
changed against its first publish, the bytes a 14-byte addition uploads, and a
metadata-only version of the 1,000,000-file archive against publishing one file.

The trees have benchmarks.scale's shape (its scale_tree, in directories of their own, so
the changes made here never touch the scale bench's trees). Publishes go to embedded
stores, the default with no server configured; each figure is one run (a first publish of
100,000 files is minutes).
"""

import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.common import ARKFS, INGEST, MIB, QUICK, SCALE, Figure, random_file
from benchmarks.scale import LARGE, SMALL, scale_tree

ARK = "ark:99999/republish"
CHANGED_FILES = 10
# The mixed tree: (count, size) from one of 64 MiB to 256 of 1 KiB, about 128 MiB in all.
MIXED = [(2**i, (64 * MIB) >> (2 * i)) for i in range(9)]
MIXED_SHRINK = 8 if QUICK else 1


def _publish(tree: Path | None, store: Path, *extra: str, ark: str = ARK) -> tuple[float, dict]:
    """Seconds `arkfs publish` took, and its --json record."""
    where = [str(tree)] if tree is not None else []
    start = time.perf_counter()
    out = subprocess.run(
        [ARKFS, "publish", *where, "--ark", ark, "--store", str(store), "--json", "-q", *extra],
        check=True,
        capture_output=True,
        text=True,
        timeout=4 * 3600,
    )
    return time.perf_counter() - start, json.loads(out.stdout)


def _mixed_tree(root: Path) -> Path:
    """Files of 1 KB to 64 MB (fixed seeds) in a few directories."""
    for i, (count, size) in enumerate(MIXED):
        for j in range(count):
            path = root / f"d{i}" / f"f{j}.bin"
            path.parent.mkdir(parents=True, exist_ok=True)
            random_file(path, max(size // MIXED_SHRINK, 1024), seed=1000 * i + j)
    return root


def bench_republish(workdir: Path) -> list[Figure]:
    """The issue's five figures but the 1% change (benchmarks.publish has that one)."""
    scratch = Path(tempfile.mkdtemp(prefix="republish-", dir=workdir))
    env_state = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(scratch / "state")  # the tree indexes, thrown away
    try:
        return [*_times(workdir, scratch), _tiny(workdir, scratch), _metadata(workdir, scratch)]
    finally:
        if env_state is None:
            os.environ.pop("XDG_STATE_HOME", None)
        else:
            os.environ["XDG_STATE_HOME"] = env_state
        shutil.rmtree(scratch, ignore_errors=True)


def _times(workdir: Path, scratch: Path) -> list[Figure]:
    tree = scale_tree(workdir / f"republish-{SMALL}", SMALL)
    files = sorted(p for p in tree.rglob("*") if p.is_file())
    changed = random.Random(26).sample(files, CHANGED_FILES)
    kept = {p: p.read_bytes() for p in changed}
    store = scratch / "store"
    first, _ = _publish(tree, store)
    unchanged, record = _publish(tree, store)
    assert record["changed"] is False, record
    try:
        time.sleep(0.2)  # the writes below must not share a clock tick with the index's stats
        for p in changed:
            p.write_bytes(kept[p] + b"changed")
        ten, record = _publish(tree, store)
        assert record["changed"] is True and record["read_bytes"] < 10 * MIB, record
    finally:
        for p, data in kept.items():
            p.write_bytes(data)
    label = f"{SMALL:,}-file tree"
    return [
        Figure(
            f"republish, unchanged, {label}",
            "s",
            unchanged,
            first,
            "its first publish",
            "<= 0.05",
            INGEST,
            note="embedded store, tree index kept",
        ),
        Figure(
            f"republish, {CHANGED_FILES} files changed, {label}",
            "s",
            ten,
            first,
            "its first publish",
            "<= 0.1",
            INGEST,
            note="embedded store, tree index kept",
        ),
    ]


def _tiny(workdir: Path, scratch: Path) -> Figure:
    tree = _mixed_tree(workdir / "republish-mixed")
    store = scratch / "mixed-store"
    _publish(tree, store, "--rehash")
    added = tree / "d8" / "added.txt"
    added.write_bytes(b"14 bytes here!")
    try:
        _, record = _publish(tree, store, "--rehash")
    finally:
        added.unlink()
    return Figure(
        "bytes uploaded after adding one 14-byte file (1 KB to 64 MB tree)",
        "KiB",
        record["uploaded_bytes"] / 1024,
        None,
        "",
        "<= 64",
        INGEST,
        note="xorb bytes, every file re-read (--rehash); shards and manifest not counted",
    )


def _metadata(workdir: Path, scratch: Path) -> Figure:
    tree = scale_tree(workdir / f"scale-{LARGE}", LARGE)  # the scale bench's, only read
    store = scratch / "large-store"
    _publish(tree, store)
    one = scratch / "one"
    one.mkdir()
    (one / "file.txt").write_bytes(b"one file\n")
    alone, _ = _publish(one, store, ark="ark:99999/republish-one")
    meta, record = _publish(None, store, "--license", "CC-BY-4.0", "--keyword", "bench")
    assert record["read_bytes"] == 0 and record["uploaded_bytes"] == 0, record
    return Figure(
        f"metadata-only version of the {LARGE:,}-file archive",
        "s",
        meta,
        alone,
        "publishing one file",
        "<= 20",
        SCALE,
        note="embedded store",
    )
