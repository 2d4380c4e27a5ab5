"""`--hide-xattrs` / `-o hide_xattrs` / `hide_xattrs = true` on real mounts: arkfs's own
attributes stay out of listxattr, so `cp -a`, `rsync -aX` and `getfattr -d` copy or show
none of them, while getxattr by name still answers (as CVMFS_HIDE_MAGIC_XATTRS does). The
volatile ones (user.arkfs.cached, user.arkfs.stats) are never listed, with or without it
(issue 24, point 10)."""

import os
import subprocess
from pathlib import Path

import pytest

from tests.mounted.test_noxattr import helper_mount
from tests.support.archive import make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount

ARK = "ark:12345/x6hide"
VOLATILE = {"user.arkfs.cached", "user.arkfs.stats"}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("hide")
    publish(make_tree(base / "tree"), ARK, "--store", str(base / "store"))
    return base / "store"


def getfattr_dump(path: Path) -> str:
    done = subprocess.run(
        ["getfattr", "-d", "-m", "-", str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def copied_xattrs(source: Path, where: Path) -> set[str]:
    """The xattr names `cp -a` gives a copy of source."""
    where.mkdir(exist_ok=True)
    copy = where / "copy"
    done = subprocess.run(["cp", "-a", str(source), str(copy)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return set(os.listxattr(copy))


def assert_hidden(mnt: Path, tmp_path: Path) -> None:
    """Nothing of arkfs's own is listed or copied; each still answers by name."""
    readme = mnt / ARK / "readme.txt"
    for path in (mnt, mnt / ARK, mnt / ARK / "c3", readme):
        assert os.listxattr(path) == [], path
    assert "user." not in getfattr_dump(readme)
    assert copied_xattrs(readme, tmp_path) == set()
    assert os.getxattr(readme, "user.ark.id") == f"{ARK}/readme%2Etxt".encode()
    assert os.getxattr(readme, "user.xet.hash") and os.getxattr(readme, "user.ark.erc")
    assert os.getxattr(readme, "user.arkfs.cached") in (b"0.00", b"1.00")
    assert run_arkfs("stats", str(mnt)).returncode == 0


def test_hide_xattrs_lists_none_of_arkfs_own_but_answers_each(store: Path, tmp_path: Path) -> None:
    cache = ("--store", str(store), "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "hidden", *cache, "--hide-xattrs") as m:
        assert_hidden(m.path, tmp_path / "a")


def test_volatile_xattrs_are_never_listed(store: Path, tmp_path: Path) -> None:
    cache = ("--store", str(store), "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "shown", *cache) as m:
        readme = m.path / ARK / "readme.txt"
        listed = set(os.listxattr(readme))
        assert {"user.ark.id", "user.ark.erc", "user.xet.hash"} <= listed
        assert not listed & VOLATILE and not set(os.listxattr(m.path)) & VOLATILE
        assert os.getxattr(readme, "user.arkfs.cached") in (b"0.00", b"1.00")
        (tmp_path / "b").mkdir()
        copied = copied_xattrs(readme, tmp_path / "b")
        assert "user.ark.id" in copied and not copied & VOLATILE
        assert "user.arkfs" not in getfattr_dump(readme)
        assert run_arkfs("stats", str(m.path)).returncode == 0


def test_hide_xattrs_as_a_mount_option_and_a_config_key(store: Path, tmp_path: Path) -> None:
    options = f"hide_xattrs,cache_dir={tmp_path / 'cache'}"
    with helper_mount(tmp_path / "helper", f"store:{store}", options) as mnt:
        assert_hidden(mnt, tmp_path / "a")
    config = tmp_path / "config.toml"
    config.write_text(f'store = "{store}"\nhide_xattrs = true\n')
    with arkfs_mount(
        tmp_path / "config", "--config", str(config), "--cache-dir", str(tmp_path / "cache")
    ) as mounted:
        assert_hidden(mounted.path, tmp_path / "b")
