"""`--no-xattrs` / `-o noxattr` / `noxattr = true` on real mounts: getxattr answers "not
supported" (so the kernel stops asking and `ls -l` costs no round trips for xattrs),
listings still work, `arkfs stats` says why it cannot, and without it xattrs still work."""

import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.archive import make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount, cleanup

ARK = "ark:12345/x6noxattr"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("noxattr")
    publish(make_tree(base / "tree"), ARK, "--store", str(base / "store"))
    return base / "store"


@contextmanager
def helper_mount(mnt: Path, source: str, options: str) -> Iterator[Path]:
    """The mount-helper form, `arkfs SOURCE MOUNTPOINT -o OPTIONS`, as mount.fuse3 calls it."""
    mnt.mkdir()
    done = run_arkfs(source, str(mnt), "-o", options)
    found = re.search(r"\(pid (\d+)", done.stdout)
    try:
        assert done.returncode == 0 and found, done.stdout + done.stderr
        yield mnt
    finally:
        cleanup(mnt, int(found[1]) if found else None)


def getfattr(path: Path, name: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["getfattr", "--only-values", "-n", name, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )


def assert_no_xattrs(mnt: Path) -> None:
    """getfattr fails with "Operation not supported" (twice: the kernel's own answer the
    second time), `ls -lR` lists everything, and `arkfs stats` says why it cannot work."""
    readme = mnt / ARK / "readme.txt"
    for _ in range(2):
        got = getfattr(readme, "user.ark.id")
        assert got.returncode != 0 and "Operation not supported" in got.stderr, got
    assert "Operation not supported" in getfattr(mnt, "user.arkfs.stats").stderr
    listed = subprocess.run(
        ["ls", "-lR", str(mnt / ARK)], capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    assert "readme.txt" in listed.stdout and "entry-299-with" in listed.stdout
    assert readme.read_bytes() == b"hello, archive\n"
    stats = run_arkfs("stats", str(mnt))
    assert stats.returncode == 2 and stats.stderr.count("\n") == 1, stats.stderr
    assert "--no-xattrs" in stats.stderr, stats.stderr


def test_no_xattrs_turns_xattrs_off_and_without_it_they_work(store: Path, tmp_path: Path) -> None:
    cache = ("--store", str(store), "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "off", *cache, "--no-xattrs") as m:
        assert_no_xattrs(m.path)
    with arkfs_mount(tmp_path / "on", *cache) as m:
        assert getfattr(m.path / ARK / "readme.txt", "user.ark.id").stdout == f"{ARK}/readme%2Etxt"
        assert run_arkfs("stats", str(m.path)).returncode == 0


def test_noxattr_as_a_mount_option_and_a_config_key(store: Path, tmp_path: Path) -> None:
    options = f"noxattr,cache_dir={tmp_path / 'cache'}"
    with helper_mount(tmp_path / "helper", f"store:{store}", options) as mnt:
        assert_no_xattrs(mnt)
    config = tmp_path / "config.toml"
    config.write_text(f'store = "{store}"\nnoxattr = true\n')
    with arkfs_mount(
        tmp_path / "config", "--config", str(config), "--cache-dir", str(tmp_path / "cache")
    ) as mounted:
        assert_no_xattrs(mounted.path)
