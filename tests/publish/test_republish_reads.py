"""An immediate republish reads nothing and says so: the summary line counts the bytes read,
not the bytes the tree index knew; on the embedded store and on `arkfs serve`."""

import json
import os
import time
from pathlib import Path

from arkfs.publish.index import RACY_NS
from tests.support.cli import run_arkfs
from tests.support.targets import forget_scan
from tests.support.targets import target as target

ARK = "ark:12345/x6np1wh8k"
DAY_NS = 86_400 * 10**9


def old_tree(root: Path) -> Path:
    """Three files of 200 KiB in all, their mtimes a day back; past the index's racy window
    (ctime, which utime cannot set back, must be older than RACY_NS when a file is read)."""
    (root / "c3").mkdir(parents=True)
    (root / "README.txt").write_bytes(b"read me\n" * 100)
    (root / "c3" / "a.bin").write_bytes(os.urandom(100_000))
    (root / "c3" / "b.bin").write_bytes(os.urandom(100_000))
    then = time.time_ns() - DAY_NS
    for path in root.rglob("*"):
        os.utime(path, ns=(then, then))
    time.sleep(2 * RACY_NS / 1e9)  # not a timing assert: the index trusts only settled files
    return root


def publish(tree: Path, where: list[str], *extra: str) -> tuple[str, str]:
    out = run_arkfs("publish", str(tree), "--ark", ARK, *where, *extra)
    assert out.returncode == 0, out.stderr
    return out.stdout, (out.stderr.splitlines() or [""])[-1]


def test_immediate_republish_reads_no_file_and_the_summary_says_so(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    tree = old_tree(tmp_path / "tree")
    _, first = publish(tree, target[0])
    assert ": 3 files, 196.1 KiB, 196.1 KiB read, " in first, first
    out, again = publish(tree, target[0])
    assert out.startswith("nothing changed since v1"), out
    assert ": 3 files, 196.1 KiB, 0 B read (196.1 KiB unchanged since the last publish: not " in (
        again
    ), again
    assert "hashed" not in again, again
    record = json.loads(publish(tree, target[0], "--json", "-q")[0])
    assert record["read_bytes"] == 0 and record["changed"] is False, record


def test_a_touched_file_is_read_again_and_counted(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    tree = old_tree(tmp_path / "tree")
    publish(tree, target[0])
    os.utime(tree / "c3" / "a.bin")  # a new mtime: the index cannot vouch for it
    _, again = publish(tree, target[0])
    assert ", 97.7 KiB read (98.4 KiB unchanged since the last publish: not read), " in again, again


def test_an_unchanged_hard_link_republishes_unread(
    tmp_path: Path, target: tuple[list[str], Path]
) -> None:
    """The first name of a hard-linked file taken from the index still gives its content
    to the other names: the tree is unchanged, nothing is read."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.bin").write_bytes(os.urandom(50_000))
    os.link(tree / "a.bin", tree / "b.bin")
    time.sleep(2 * RACY_NS / 1e9)  # not a timing assert: the index trusts only settled files
    publish(tree, target[0])
    forget_scan(*target, tree)  # look each file up in the index
    record = json.loads(publish(tree, target[0], "--json", "-q")[0])
    assert record["changed"] is False and record["read_bytes"] == 0, record
    assert record["files"] == 2 and record["bytes"] == 100_000, record
