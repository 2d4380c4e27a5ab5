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


def _published(root: Path, where: Path, version: Version) -> TreeIndex:
    """The tree index of root after root, settled, was published as version."""
    settled(root)
    scanned = scan(root)
    assert scanned.digest is not None and scanned.packed is not None
    index = TreeIndex(where)
    index.stage(scanned.packed)
    index.remember(scanned.digest, version)
    return index


def test_the_index_keeps_the_rows_of_the_scan_it_remembers(tmp_path: Path) -> None:
    tree, where = tmp_path / "tree", tmp_path / "idx.msgpack"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f").write_bytes(b"data")
    v1 = Version("ark:12345/x6np1wh8k", 1, 1234.5)
    _published(tree, where, v1)
    remembered = TreeIndex(where).remembered()
    assert remembered is not None and remembered[0] == v1
    assert scan(tree).changes(remembered[1]) is not None
    rows = where.with_suffix(".rows")
    rows.write_bytes(rows.read_bytes()[:-1] + b"\0")  # not the rows the digest is of
    assert TreeIndex(where).remembered() is None
    assert TreeIndex(None).remembered() is None


def test_changes_are_the_rows_that_differ_from_the_remembered_scan(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    for d in ("a", "b", "c"):
        (tree / d).mkdir(parents=True)
        for f in ("x", "y"):
            (tree / d / f).write_bytes(f"{d}{f}".encode())
    (tree / "l").symlink_to("a/x")
    index = _published(tree, tmp_path / "idx.msgpack", Version("ark:12345/x6np1wh8k", 1, 1.0))
    remembered = index.remembered()
    assert remembered is not None
    (tree / "a" / "x").write_bytes(b"new content")  # changed: a/x only (a's mtime stays)
    (tree / "b" / "y").unlink()  # gone: b/y, and b's mtime changed
    (tree / "c" / "z").write_bytes(b"new")  # added: c/z, and c changed
    (tree / "c" / "x").chmod(0o600)
    _retarget(tree / "l")
    settled(tree)
    changes = scan(tree).changes(remembered[1])
    assert changes is not None
    assert sorted(f.entry.path for f in changes.found) == ["a/x", "b", "c", "c/x", "c/z", "l"]
    assert changes.dropped == {"a/x", "b", "b/y", "c", "c/x", "l"}
    assert next(f for f in changes.found if f.entry.path == "c/x").entry.mode == 0o600
    assert scan(tree).changes(b"\xc1 not rows") is None
    os.link(tree / "c" / "z", tree / "c" / "w")  # a hard link changed: published whole
    settled(tree)
    assert scan(tree).changes(remembered[1]) is None
