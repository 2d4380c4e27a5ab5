"""Reading many small files through a mount of `serve`: reconstruction replies carry only
the footers the client lacks, so 2,000 files of 4 KiB in one xorb, read in random order,
cost at most twice their bytes (they cost a whole footer per file, #28); and `cp -r` of a
directory asks for its files' maps a hundred to a request and brings several files'
bytes in each xorb range, as `arkfs get` does (arkfs.mount.fuse.scans), while a `cat` of
one file asks for its own map only. What the mount gives is the source tree, as `diff -r`
sees it."""

import random
import subprocess
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

import pytest

from arkfs.xet.reconstruction import BATCH_FILES
from tests.support.archive import publish
from tests.support.mount import Mounted, arkfs_mount, mount_stats
from tests.support.server import Server

pytestmark = pytest.mark.slow
ARK = "ark:12345/x6small"
FILES, SIZE = 2000, 4096
SCANNED = 3 * BATCH_FILES  # files of the tree `cp -r` copies


@contextmanager
def _served(tmp_path: Path, tree: Path) -> Iterator[Server]:
    """tree published as ARK, and `arkfs serve` of it (token "reader" reads)."""
    publish(tree, ARK, "--store", str(tmp_path / "store"))
    (tmp_path / "tokens").write_text("reader read\n")
    args = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(tmp_path / "store", *args) as server:
        yield server


def _mount(tmp_path: Path, server: Server) -> AbstractContextManager[Mounted]:
    """A mount of server whose chunk cache is tmp_path/cache (empty at first)."""
    mount = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
    return arkfs_mount(tmp_path / "mnt", *mount)


def test_small_files_cost_at_most_twice_their_bytes(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    rng = random.Random(11)
    for n in range(FILES):
        d = tree / f"d{n // 100:02d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{n:04d}.bin").write_bytes(rng.randbytes(SIZE))
    paths = sorted(tree.rglob("*.bin"))
    rng.shuffle(paths)  # no scan of a directory: each file's reconstruction alone
    with _served(tmp_path, tree) as server, _mount(tmp_path, server) as m:
        for path in paths:
            got = (m.path / ARK / path.relative_to(tree)).read_bytes()
            assert got == path.read_bytes(), path
        stats = server.stats("reader")
    assert stats["reconstructions"] >= FILES
    through = (
        stats["reconstruction_bytes_sent"]
        + stats["xorb_bytes_served"]
        + stats["footer_bytes_served"]
    )
    print(f"bytes through serve for {FILES} files of {SIZE} B: {through:,} ({stats})")
    assert through <= 2 * FILES * SIZE


def test_cp_r_asks_in_batches_and_cat_of_one_file_does_not(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    rng = random.Random(29)
    for n in range(SCANNED):
        d = tree / "data" / ("sub" if n % 10 == 9 else "")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{n:04d}.bin").write_bytes(rng.randbytes(rng.randint(1, 8000)))
    with _served(tmp_path, tree) as server:
        with _mount(tmp_path, server) as m:
            one = m.path / ARK / "data" / "f0000.bin"
            subprocess.run(["cat", str(one)], check=True, capture_output=True)
            alone = server.stats("reader")
            subprocess.run(["cp", "-r", str(m.path / ARK / "data"), tmp_path / "copy"], check=True)
            copied = server.stats("reader")
        with _mount(tmp_path, server) as m:  # the same cache: maps and chunks from disk
            subprocess.run(["cp", "-r", str(m.path / ARK / "data"), tmp_path / "again"], check=True)
            warm = mount_stats(m.path)
        assert server.stats("reader")["reconstructions"] == copied["reconstructions"]
    for copy in ("copy", "again"):
        diff = subprocess.run(["diff", "-r", tmp_path / copy, tree / "data"], capture_output=True)
        assert diff.returncode == 0, diff.stdout
    assert warm["maps_from_disk"] == SCANNED and warm["fetches"] == 0
    assert alone["batch_reconstructions"] == 0 and alone["reconstructions"] == 1
    assert copied["batch_reconstructions"] >= 4  # data/'s 270 files, and sub/'s 30
    xorb_gets = copied["xorb_requests"] - alone["xorb_requests"]
    assert xorb_gets < SCANNED / 10, xorb_gets  # several files' bytes to a range
