"""A tree of a few thousand files on a real mount of the embedded store: the manifest's
columns (version 2) answer find, stat, lookups by name and reads, first from the store
and then, on a remount, from the archive cache on disk.

Names are chosen where path order and name order could part: `a-b` sorts before `a/x`
as a path but after `a` as a name; non-ASCII and spaces are encoded in the paths column.
"""

import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.mount import arkfs_mount

ARK = "ark:12345/x6many"
FILES = 3_000
TIMEOUT = 600  # seconds: a hang guard for find, never a measure

pytestmark = pytest.mark.slow


def make_tree(root: Path) -> dict[str, bytes]:
    """FILES small files in nested directories, plus the awkward names; path -> bytes."""
    rng = random.Random(3)
    files: dict[str, bytes] = {}
    for i in range(FILES):
        files[f"d{i // 300}/e{i // 30 % 10}/f{i}.bin"] = rng.randbytes(rng.randrange(0, 3000))
    for name in ("a/x", "a-b", "a/y z", "é/ü.txt", "a.b/c", "top"):
        files[name] = name.encode()
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    (root / "a" / "link").symlink_to("x")
    return files


def local_paths(root: Path) -> set[str]:
    """Every path below root, as find prints it relative to root."""
    found = set()
    for dirpath, dirs, names in os.walk(root):
        for name in dirs + names:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def find(root: Path) -> set[str]:
    """Every path below root, as find lists it through the mount."""
    out = subprocess.run(
        ["find", str(root), "-mindepth", "1", "-printf", "%P\n"],
        capture_output=True,
        text=True,
        check=True,
        timeout=TIMEOUT,
    )
    return set(out.stdout.splitlines())


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, dict]]:
    base = tmp_path_factory.mktemp("many")
    tree, store = base / "tree", base / "store"
    files = make_tree(tree)
    publish(tree, ARK, "--store", str(store))
    yield tree, store, files


def test_find_stat_lookup_and_read_on_a_mount_and_a_remount(
    published: tuple[Path, Path, dict], tmp_path: Path
) -> None:
    tree, store, files = published
    cache = tmp_path / "cache"
    for attempt in ("from the store", "from the archive cache"):
        with arkfs_mount(tmp_path / "mnt", "--store", str(store), "--cache-dir", str(cache)) as m:
            root = m.path / ARK
            # Looked up by name before any listing: the path index, not readdir, finds it.
            assert (root / "d9/e9/f2999.bin").read_bytes() == files["d9/e9/f2999.bin"], attempt
            assert find(root) == local_paths(tree), attempt
            for rel in [*random.Random(4).sample(sorted(files), 200), "a-b", "é/ü.txt"]:
                assert (root / rel).stat().st_size == len(files[rel]), rel
                assert (root / rel).read_bytes() == files[rel], rel
            assert os.readlink(root / "a/link") == "x"
            assert sorted(os.listdir(root / "a")) == ["link", "x", "y z"]
            assert os.stat(root).st_nlink == 2 + len([p for p in tree.iterdir() if p.is_dir()])
            assert not (root / "a/nothing").exists() and not (root / "a-bc").exists()
