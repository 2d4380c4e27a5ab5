"""`cp -r` of a directory of small files through a mount of `arkfs serve` asks for their
maps a hundred to a request and brings several files' bytes in each xorb range, as
`arkfs get` does (arkfs.mount.fuse.scans); a `cat` of one file asks for its own map only.
The copy is the source tree, as `diff -r` sees it."""

import random
import subprocess
from pathlib import Path

import pytest

from arkfs.xet.reconstruction import BATCH_FILES
from tests.support.archive import publish
from tests.support.mount import arkfs_mount
from tests.support.server import Server

pytestmark = pytest.mark.slow
ARK = "ark:12345/x6scan"
FILES = 3 * BATCH_FILES


def test_cp_r_asks_in_batches_and_cat_of_one_file_does_not(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    rng = random.Random(29)
    for n in range(FILES):
        d = tree / "data" / ("sub" if n % 10 == 9 else "")
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{n:04d}.bin").write_bytes(rng.randbytes(rng.randint(1, 8000)))
    publish(tree, ARK, "--store", str(tmp_path / "store"))
    (tmp_path / "tokens").write_text("reader read\n")
    args = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(tmp_path / "store", *args) as server:
        mount = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *mount) as m:
            one = m.path / ARK / "data" / "f0000.bin"
            subprocess.run(["cat", str(one)], check=True, capture_output=True)
            alone = server.stats("reader")
            copy = tmp_path / "copy"
            subprocess.run(["cp", "-r", str(m.path / ARK / "data"), str(copy)], check=True)
            copied = server.stats("reader")
    diff = subprocess.run(["diff", "-r", str(copy), str(tree / "data")], capture_output=True)
    assert diff.returncode == 0, diff.stdout
    assert alone["batch_reconstructions"] == 0 and alone["reconstructions"] == 1
    assert copied["batch_reconstructions"] >= 3  # the directory's files, and sub/'s
    xorb_gets = copied["xorb_requests"] - alone["xorb_requests"]
    assert xorb_gets < FILES / 10, xorb_gets  # several files' bytes to a range
