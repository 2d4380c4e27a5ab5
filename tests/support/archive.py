"""Archives for the mount tests: a tree on disk, published with the real `arkfs publish`."""

import os
import random
from pathlib import Path

import blake3

from arkfs.archive.manifest import Manifest
from arkfs.ark.erc import Erc
from arkfs.store.local import LocalStore
from tests.support.cli import run_arkfs
from tests.support.corpus import corpus

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


GIB = 1024 * MIB
BIG_FILE = "big/one-gib.bin"
NESTED = 320  # small files in the nested directories of the full tree
_NIBBLES = bytes(b & 0x0F for b in range(256))


def write_big_file(path: Path, size: int, seed: bytes) -> None:
    """size bytes from BLAKE3's output stream, every other MiB squeezed to 16 symbols, so
    the publisher stores chunks both raw and LZ4-compressed; written a MiB at a time."""
    stream = blake3.blake3(seed)
    with open(path, "wb") as f:
        for n, at in enumerate(range(0, size, MIB)):
            block = stream.digest(length=min(MIB, size - at), seek=at)
            f.write(block.translate(_NIBBLES) if n % 2 else block)


def make_full_tree(root: Path, big_size: int = GIB) -> Path:
    """The acceptance tree: the edge-case corpus (empty files, sizes at the chunk limits),
    hundreds of small files nested four deep (some empty), a 1 GiB file, an empty
    directory and a symlink; modes vary, every mtime is fixed and distinct."""
    rng = random.Random(1204)
    files = {f"corpus/{name}": data for name, data in corpus().items()}
    for i in range(NESTED):
        a, b, c = i % 5, i % 7, i % 3
        size = rng.choice([0, 1, 100, 4096, 8191, 8192, 8193, rng.randrange(200_000)])
        files[f"nested/a{a}/b{b}/c{c}/file-{i:03d}.dat"] = rng.randbytes(size)
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    (root / BIG_FILE).parent.mkdir(parents=True)
    write_big_file(root / BIG_FILE, big_size, b"arkfs acceptance tree")
    (root / "nested/empty-dir").mkdir()
    (root / "nested/link-to-text").symlink_to("../corpus/text")
    modes = [0o644, 0o600, 0o755, 0o444, 0o640]
    for i, path in enumerate(sorted(root.rglob("*"), reverse=True)):
        if path.is_symlink():
            continue
        if path.is_dir():
            path.chmod(0o750 if path.name == "b3" else 0o755)
        else:
            path.chmod(modes[i % len(modes)])
        mtime = MTIME + i * 1_000_000_007
        os.utime(path, ns=(mtime, mtime), follow_symlinks=False)
    os.utime(root / "nested/link-to-text", ns=(MTIME, MTIME), follow_symlinks=False)
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
