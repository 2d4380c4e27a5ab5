"""Republishing: an unchanged tree binds nothing, and the tree index spares reading files
whose stat did not change; on the embedded store and on `arkfs serve`."""

import hashlib
import json
import os
import time
from pathlib import Path

import msgpack

from arkfs.publish.index import TreeIndex
from arkfs.publish.scan import scan
from tests.support.cli import run_arkfs
from tests.support.targets import forget_scan, tree_index_path
from tests.support.targets import target as target

ARK = "ark:12345/x6np1wh8k"


def make_tree(root: Path) -> Path:
    """Files of mixed sizes in nested directories, old enough for the index to trust."""
    (root / "a" / "b").mkdir(parents=True)
    rng = hashlib.sha256(b"seed")
    for i in range(20):
        data = rng.digest() * (1 + i * 97)
        (root / "a" / f"f{i}.bin").write_bytes(data)
    (root / "a" / "b" / "big.bin").write_bytes(os.urandom(6 << 20))
    (root / "top.csv").write_text("x,y\n1,2\n")
    time.sleep(0.3)  # past the index's racy window (RACY_NS): not a timing assert
    return root


def publish(tree: Path, where: list[str], *extra: str) -> dict:
    out = run_arkfs("publish", str(tree), "--ark", ARK, *where, "--json", "-q", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def latest_version(where: list[str]) -> dict:
    """`arkfs versions --json`'s row of the latest version."""
    out = run_arkfs("versions", ARK, *where, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["versions"][-1]


def snapshot(store: Path) -> dict[str, bytes]:
    """Every file of the store and its bytes' hash (but SQLite's -shm, the WAL's shared
    memory index, which readers write too)."""
    return {
        str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).digest()
        for p in sorted(store.rglob("*"))
        if p.is_file() and not p.name.endswith("-shm")
    }


def test_unchanged_tree_binds_nothing_and_leaves_the_store_as_it_was(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, store = target
    tree = make_tree(tmp_path / "tree")
    first = publish(tree, where)
    assert first["version"] == 1 and first["changed"] is True
    before = snapshot(store)
    again = publish(tree, where)
    assert again["changed"] is False and again["version"] == 1
    assert again["uploaded_bytes"] == 0 and again["read_bytes"] == 0
    assert snapshot(store) == before
    prose = run_arkfs("publish", str(tree), "--ark", ARK, *where)
    assert prose.returncode == 0, prose.stderr
    assert prose.stdout.splitlines()[0].startswith("nothing changed since v1")
    assert "publish 100%: nothing changed since v1" in prose.stderr
    assert "bound v" not in prose.stderr
    assert snapshot(store) == before
    forced = publish(tree, where, "--allow-empty")
    assert forced["changed"] is True and forced["version"] == 2


def test_unchanged_tree_without_the_index_reads_all_and_binds_nothing(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, store = target
    tree = make_tree(tmp_path / "tree")
    first = publish(tree, where)
    before = snapshot(store)
    again = publish(tree, where, "--rehash")
    assert again["changed"] is False and again["read_bytes"] == first["bytes"]
    assert again["uploaded_bytes"] == 0
    assert snapshot(store) == before


def test_republish_reads_only_the_files_whose_stat_changed(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, _ = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where)
    (tree / "a" / "f3.bin").write_bytes(b"changed bytes")
    (tree / "new.txt").write_bytes(b"14 bytes here!")
    second = publish(tree, where, "--message", "two files")
    assert second["changed"] is True and second["version"] == 2
    assert second["read_bytes"] == len(b"changed bytes") + 14
    assert second["uploaded_bytes"] < 64 << 10
    latest = latest_version(where)
    assert latest["added"] == ["new.txt"] and latest["changed"] == ["a/f3.bin"]


def test_adding_a_tiny_file_uploads_little_even_reading_everything(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    where, _ = target
    tree = make_tree(tmp_path / "tree")
    for i in range(200):  # many small files around the change, and a large one
        (tree / "a" / f"small{i:03}.json").write_text(json.dumps({"i": i, "pad": "x" * i * 50}))
    publish(tree, where, "--rehash")
    (tree / "a" / "new.txt").write_bytes(b"14 bytes here!")
    second = publish(tree, where, "--rehash")
    assert second["version"] == 2 and second["read_bytes"] == second["bytes"]
    assert second["new_bytes"] == 14
    assert second["uploaded_bytes"] < 64 << 10


def test_an_index_gone_wrong_is_not_trusted(tmp_path: Path, target: tuple[list[str], Path]) -> None:
    where, store = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where)
    path = tree_index_path(where, store, tree)
    body = msgpack.unpackb(path.read_bytes())
    rows = body["files"]  # path -> stat key (32 bytes), XET hash, SHA-256
    rows[b"top.csv"] = rows[b"top.csv"][:64] + bytes(32)  # a wrong SHA-256
    # another file's XET hash, with its own SHA-256
    rows[b"a/f1.bin"] = rows[b"a/f1.bin"][:32] + rows[b"a/f2.bin"][32:]
    path.write_bytes(msgpack.packb(body))
    forget_scan(where, store, tree)  # the scan remembered would spare every lookup
    again = publish(tree, where)
    assert again["changed"] is False
    assert (
        again["read_bytes"]
        == (tree / "top.csv").stat().st_size + (tree / "a/f1.bin").stat().st_size
    )


def test_a_remembered_scan_stands_only_for_the_latest_version(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    """An unchanged tree is told so from its scan alone (the rows are not even read), until
    another version is bound: then its files are looked up and compared again."""
    where, store = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where)
    rows = tree_index_path(where, store, tree)
    rows.write_bytes(b"not an index")  # unread while the scan is the one remembered
    again = publish(tree, where)
    assert again["changed"] is False and again["read_bytes"] == 0, again
    meta = run_arkfs("publish", "--ark", ARK, *where, "--keyword", "kept", "--json", "-q")
    assert meta.returncode == 0, meta.stderr
    assert json.loads(meta.stdout)["version"] == 2
    after = publish(tree, where)  # v2 is not the version remembered: every file is read
    assert after["changed"] is False and after["version"] == 2, after
    assert after["read_bytes"] == after["bytes"], after
    last = publish(tree, where)  # and now the scan stands for v2
    assert last["changed"] is False and last["version"] == 2 and last["read_bytes"] == 0, last


def test_a_changed_tree_carries_the_rest_as_a_full_publish_would_build_it(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    """Entries are made only for what changed since the scan remembered (the index's rows
    are not even looked up: made unreadable here, every other file would be read), and the
    version bound is the one reading every file binds: --rehash finds nothing changed."""
    where, store = target
    tree = make_tree(tmp_path / "tree")
    (tree / "gone").mkdir()
    (tree / "gone" / "g.txt").write_bytes(b"goes away")
    (tree / "a" / "link").symlink_to("f1.bin")
    time.sleep(0.3)  # past the racy window: not a timing assert
    publish(tree, where)
    tree_index_path(where, store, tree).write_bytes(b"not an index")
    (tree / "a" / "f3.bin").write_bytes(b"changed bytes")
    (tree / "a" / "f4.bin").chmod(0o600)
    os.setxattr(tree / "a" / "f5.bin", "user.note", b"set later")
    (tree / "a" / "link").unlink()
    (tree / "a" / "link").symlink_to("f2.bin")
    (tree / "gone" / "g.txt").unlink()
    (tree / "gone").rmdir()
    (tree / "new" / "deep").mkdir(parents=True)
    (tree / "new" / "deep" / "n.txt").write_bytes(b"14 bytes here!")
    changed = publish(tree, where)
    assert changed["changed"] is True and changed["version"] == 2, changed
    restamped = sum((tree / "a" / f"f{i}.bin").stat().st_size for i in (4, 5))  # new ctime
    assert changed["read_bytes"] == len(b"changed bytes") + 14 + restamped, changed
    assert changed["files"] == 23 and changed["bytes"] == sum(
        p.stat().st_size for p in tree.rglob("*") if p.is_file() and not p.is_symlink()
    )
    again = publish(tree, where, "--rehash")
    assert again["changed"] is False and again["version"] == 2, again
    latest = latest_version(where)
    assert latest["added"] == ["new/deep/n.txt"] and latest["removed"] == ["gone/g.txt"]


def test_a_remembered_scan_that_does_not_describe_the_version_is_forgotten(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    """Rows remembered for v1 that v1 does not match (here: made without top.csv) fail the
    merge with one line, and the next publish compares every file instead."""
    where, store = target
    tree = make_tree(tmp_path / "tree")
    publish(tree, where)
    index = TreeIndex(tree_index_path(where, store, tree))
    remembered = index.remembered()
    assert remembered is not None
    kept = (tree / "top.csv").read_bytes()
    (tree / "top.csv").unlink()
    time.sleep(0.3)  # past the racy window: not a timing assert
    without = scan(tree)
    assert without.digest is not None and without.packed is not None
    index.stage(without.packed)
    forget_scan(where, store, tree)
    index.remember(without.digest, remembered[0])
    (tree / "top.csv").write_bytes(kept)
    out = run_arkfs("publish", str(tree), "--ark", ARK, *where, "-q")
    assert out.returncode == 1, out.stderr  # not the input's fault: the index's
    assert "cannot be merged" in out.stderr and "run the same command again" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1, out.stderr
    again = publish(tree, where)
    assert again["changed"] is True and again["version"] == 2, again  # top.csv's new mtime
