"""The corpora of the mount benchmarks, built from fixed seeds and reused while they match.

- a random file (incompressible: the worst case for the chunk cache and the network);
- a float32 array, a smooth signal plus noise, so LZ4 and byte grouping gain something;
- a tree of many small files (1 to 64 KiB, log-uniform) in nested directories, for
  metadata. Its contents are slices of one random buffer at per-file seeded offsets, so
  writing 100,000 files costs little more than the system calls.

ARKFS_BENCH_QUICK=1 shrinks every corpus so the whole run takes a minute or two.
"""

import hashlib
import json
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from benchmarks.common import MIB, random_file

QUICK = os.environ.get("ARKFS_BENCH_QUICK") == "1"
BIG = 64 * MIB if QUICK else 1024 * MIB
TREE_FILES = 2_000 if QUICK else 100_000
TREE_FANOUT = 10  # directories per level, three levels: d0/d0/d0/f0.bin
KIB = 1024


@dataclass(frozen=True)
class Corpora:
    """Where the corpora are: two big files side by side, and the small-file tree."""

    big: Path  # the directory published as one archive
    random: Path
    floats: Path
    tree: Path


def float_file(path: Path, size: int, seed: int) -> Path:
    """A float32 array of size bytes: two slow sines plus 1% noise (once; reused)."""
    if path.exists() and path.stat().st_size == size:
        return path
    rng = np.random.default_rng(seed)
    block = 16 * MIB // 4  # floats per block
    with path.open("wb") as f:
        for start in range(0, size // 4, block):
            t = np.arange(start, min(start + block, size // 4), dtype=np.float64)
            signal = (np.sin(t / 5000.0) + 0.5 * np.sin(t / 97.0)).astype(np.float32)
            signal += 0.01 * rng.standard_normal(t.size, dtype=np.float32)
            f.write(signal.tobytes())
    return path


def tree_layout(files: int, seed: int) -> list[tuple[str, int, int]]:
    """(relative path, size, offset into the shared buffer) of every file of the tree."""
    rng = random.Random(seed)
    out = []
    for i in range(files):
        size = int(KIB * 64 ** rng.random())  # log-uniform in [1, 64) KiB
        a, b, c = i // 100 % TREE_FANOUT, i // 1000 % TREE_FANOUT, i // 10000
        out.append((f"d{c}/d{b}/d{a}/f{i}.bin", size, rng.randrange(16 * MIB)))
    return out


def small_tree(root: Path, files: int, seed: int) -> Path:
    """Write the tree under root, unless root's stamp says it already holds this layout."""
    layout = tree_layout(files, seed)
    stamp = root.with_name(root.name + ".layout")
    digest = hashlib.sha256(json.dumps(layout).encode()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and _tree_matches(root, layout):
        return root
    stamp.unlink(missing_ok=True)
    buffer = random.Random(seed).randbytes(16 * MIB + 64 * KIB)
    made: set[Path] = set()
    for rel, size, offset in layout:
        path = root / rel
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(buffer[offset : offset + size])
    stamp.write_text(digest)
    return root


def _tree_matches(root: Path, layout: list[tuple[str, int, int]]) -> bool:
    """Whether root holds exactly the layout's files, with their sizes."""
    want = {rel: size for rel, size, _ in layout}
    have = {}
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            have[os.path.relpath(path, root)] = os.stat(path).st_size
    return have == want


def build(workdir: Path) -> Corpora:
    """Every corpus under workdir, built or reused."""
    big = workdir / "big"
    big.mkdir(parents=True, exist_ok=True)
    return Corpora(
        big=big,
        random=random_file(big / "random.bin", BIG, seed=1024),
        floats=float_file(big / "signal.f32", BIG, seed=32),
        tree=small_tree(workdir / "tree", TREE_FILES, seed=100_000),
    )
