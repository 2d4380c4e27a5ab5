"""The scan's digest sees every change the manifest could show, and the tree index
remembers it only with the version it stands for."""

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from arkfs.publish.index import RACY_NS, TreeIndex, Version
from arkfs.publish.scan import scan

pytestmark = pytest.mark.unit


def settled(root: Path) -> bytes:
    """The digest of root, once every change is past the racy window."""
    time.sleep(2 * RACY_NS / 1e9)  # not a timing assert: a fresh change gives no digest
    digest = scan(root).digest
    assert digest is not None
    return digest


def _replace(path: Path) -> None:
    """The same bytes and mtime under a new inode."""
    st = path.stat()
    path.with_name("new").write_bytes(path.read_bytes())
    os.utime(path.with_name("new"), ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(path.with_name("new"), path)


def _retarget(link: Path) -> None:
    link.unlink()
    link.symlink_to("d")


CHANGES: dict[str, Callable[[Path], object]] = {
    "size": lambda t: (t / "d" / "f").write_bytes(b"data+"),
    "mtime": lambda t: os.utime(t / "d" / "f", ns=(0, 10**18)),
    "mode": lambda t: (t / "d" / "f").chmod(0o600),
    "inode": lambda t: _replace(t / "d" / "f"),
    "attribute": lambda t: os.setxattr(t / "d" / "f", "user.note", b"x"),
    "new directory": lambda t: (t / "d" / "e").mkdir(),
    "symlink target": lambda t: _retarget(t / "l"),
    "root mode": lambda t: t.chmod(0o700),
}


@pytest.mark.parametrize("change", CHANGES)
def test_every_change_gives_another_digest(tmp_path: Path, change: str) -> None:
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"data")
    (tree / "l").symlink_to("d/f")
    (tree / os.fsdecode(b"caf\xe9")).write_bytes(b"a name that is not UTF-8")
    before = settled(tree)
    assert settled(tree) == before
    try:
        CHANGES[change](tree)
    except OSError as exc:  # a file system without user attributes
        pytest.skip(f"{change}: {exc}")
    assert settled(tree) != before


def test_a_fresh_change_gives_no_digest(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"just written")
    assert scan(tmp_path).digest is None


def test_the_index_remembers_a_scan_with_its_version(tmp_path: Path) -> None:
    where = tmp_path / "idx.msgpack"
    index = TreeIndex(where)
    v3 = Version("ark:12345/x6np1wh8k", 3, 1234.5)
    assert index.published(b"d" * 32) is None
    index.remember(b"d" * 32, v3)
    assert TreeIndex(where).published(b"d" * 32) == v3
    assert TreeIndex(where).published(b"d" * 32) != v3._replace(ark="ark:12345/other")
    assert TreeIndex(where).published(b"e" * 32) is None
    index.remember(None, v3._replace(version=4))  # a scan too recent to trust: not kept
    assert TreeIndex(where).published(b"d" * 32) == v3
    where.with_suffix(".scan").write_bytes(b"\xc1 not msgpack")
    assert TreeIndex(where).published(b"d" * 32) is None
    TreeIndex(None).remember(b"d" * 32, v3)
    assert TreeIndex(None).published(b"d" * 32) is None
