"""arkfs without pyfuse3 (the `fuse` extra, which needs libfuse3 to build): publish, get
and ark:// work; mount, umount and stats say, in one line, what to install."""

import subprocess
import sys
from pathlib import Path

from tests.support.archive import make_tree, publish

# Runs the command line with pyfuse3 made unimportable, as where it was never installed.
WITHOUT_PYFUSE3 = """
import sys
sys.modules["pyfuse3"] = None
from arkfs.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def arkfs_without_pyfuse3(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PYFUSE3, *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_publish_and_get_need_no_pyfuse3(tmp_path: Path) -> None:
    tree, store = make_tree(tmp_path / "tree"), tmp_path / "store"
    published = arkfs_without_pyfuse3(
        "publish", str(tree), "--ark", "ark:12345/x5nofuse", "--store", str(store), "-q",
        "--who", "W", "--what", "T", "--when", "2026",
    )  # fmt: skip
    assert published.returncode == 0, published.stderr
    got = arkfs_without_pyfuse3(
        "get", "ark:12345/x5nofuse/data/big.bin", str(tmp_path / "big.bin"),
        "--store", str(store), "--no-cache", "-q",
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "big.bin").read_bytes() == (tree / "data/big.bin").read_bytes()


def test_the_mount_commands_say_what_to_install(tmp_path: Path) -> None:
    publish(make_tree(tmp_path / "tree"), "ark:12345/x5nofuse", "--store", str(tmp_path / "s"))
    (tmp_path / "mnt").mkdir()
    for args in (
        ("mount", str(tmp_path / "mnt"), "--store", str(tmp_path / "s")),
        ("umount", str(tmp_path / "mnt")),
        ("stats", str(tmp_path / "mnt")),
    ):
        done = arkfs_without_pyfuse3(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and "pip install 'arkfs[fuse]'" in done.stderr, args
