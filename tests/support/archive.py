"""Archives for the mount tests: a tree on disk, published with the real `arkfs publish`."""

import os
import random
from pathlib import Path

from arkfs.ark.erc import Erc
from arkfs.ark.manifest import Manifest
from arkfs.store.local import LocalStore
from tests.support.cli import run_arkfs

MIB = 1024 * 1024
MANY = 300  # files in many/: more than one readdir buffer holds
MTIME = 1_600_000_000_123_456_789
WHO, WHAT, PERSISTENCE = "Lab of Sines", "Sine tables", "kept for ten years"


def make_tree(root: Path) -> Path:
    """Nested and empty directories, empty and multi-MiB files, a symlink, dotted names,
    odd modes, and a directory of many entries; every mtime fixed."""
    rng = random.Random(5)
    files = {
        "readme.txt": b"hello, archive\n",
        "empty.txt": b"",
        "c3/s5.v7.xsl": b"<xsl:stylesheet/>\n",
        "c3/deep/er/leaf.bin": rng.randbytes(1000),
        "data/big.bin": rng.randbytes(3 * MIB + 12345),
        "data/one": b"\x42",
        "data/name with spaces-and-hyphens.txt": b"spaced\n",
        **{
            f"many/entry-{i:03d}-with-a-long-name-to-fill-readdir.txt": b"%d\n" % i
            for i in range(MANY)
        },
    }
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / "emptydir").mkdir()
    (root / "link").symlink_to("readme.txt")
    (root / "data/one").chmod(0o600)
    (root / "c3/deep/er/leaf.bin").chmod(0o755)
    for path in sorted(root.rglob("*"), reverse=True):
        os.utime(path, ns=(MTIME, MTIME), follow_symlinks=False)
    return root


def publish(tree: Path, ark: str, *target: str) -> None:
    """`arkfs publish TREE --ark ARK TARGET...` (TARGET: --store DIR, or --server URL --token T)."""
    done = run_arkfs(
        "publish", str(tree), "--ark", ark, *target,
        "--who", WHO, "--what", WHAT, "--persistence", PERSISTENCE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def bound(store: Path, ark: str) -> tuple[Manifest, Erc]:
    """The manifest and ERC record bound to ark in an embedded store."""
    with LocalStore.open(store, create=False) as s:
        binding = s.get_binding(ark)
    return Manifest.from_msgpack(binding.manifest), Erc.from_anvl(binding.erc)
