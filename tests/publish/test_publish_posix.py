"""`arkfs publish` keeps what POSIX archivers keep (pre-1970 mtimes, hard links, user.*
attributes, the root's mode and mtime), and what it cannot publish as the tree says is
found at scan, before any hashing: one line and exit 2, or one warning line."""

import json
import os
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO

import pytest
import trio

from arkfs.archive.manifest import Entry, Kind
from arkfs.archive.record import Archive
from arkfs.ark.erc import Erc
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.publish import publisher
from arkfs.publish.index import RACY_NS, TreeIndex
from arkfs.publish.publisher import PublishError, publish_tree
from arkfs.publish.scan import Found, scan
from arkfs.store.local import LocalStore
from tests.support.archive import bound
from tests.support.cli import run_arkfs

ARK = "ark:12345/x6posix"
BEFORE_1970 = -315_619_200_123_456_789  # 1960-01-01, and some nanoseconds


def publish(tree: Path, store: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run_arkfs("publish", str(tree), "--ark", ARK, "--store", str(store), *extra)


def test_mtimes_before_1970_links_attributes_and_root_are_in_the_manifest(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "old").write_bytes(b"from the sixties\n")
    os.utime(tree / "old", ns=(BEFORE_1970, BEFORE_1970))
    os.link(tree / "old", tree / "d" / "linked")
    os.setxattr(tree / "d", "user.color", b"blue")
    os.setxattr(tree / "old", "user.bytes", b"\xff\x00x")
    tree.chmod(0o750)
    os.utime(tree, ns=(BEFORE_1970, BEFORE_1970 - 1))
    done = publish(tree, tmp_path / "store")
    assert done.returncode == 0, done.stderr
    manifest, _ = bound(tmp_path / "store", ARK)
    old, linked, d = manifest.entry("old"), manifest.entry("d/linked"), manifest.entry("d")
    assert old is not None and linked is not None and d is not None
    assert old.mtime_ns == linked.mtime_ns == BEFORE_1970
    assert old.link == linked.link == "d/linked"  # the group's first path, in path order
    assert old.xattrs == (("user.bytes", b"\xff\x00x"),) and d.xattrs == (("user.color", b"blue"),)
    assert manifest.root is not None
    assert (manifest.root.mode, manifest.root.mtime_ns) == (0o750, BEFORE_1970 - 1)


def test_a_root_entry_named_like_a_version_refuses_the_publish_before_hashing(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "data").write_bytes(b"x" * 100_000)
    (tree / "@v1").write_text("a file named like version 1\n")
    done = publish(tree, tmp_path / "store")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "@v1" in done.stderr
    assert "--allow-version-names" in done.stderr
    assert "hash" not in done.stderr and not (tmp_path / "store").exists()  # nothing hashed
    done = publish(tree, tmp_path / "store", "--allow-version-names")
    assert done.returncode == 0, done.stderr
    assert bound(tmp_path / "store", ARK)[0].entry("@v1") is not None
    deeper = tmp_path / "deeper"
    (deeper / "sub").mkdir(parents=True)
    (deeper / "sub" / "@v1").write_text("below the root it is an ordinary name\n")
    assert publish(deeper, tmp_path / "store").returncode == 0


def test_a_real_info_file_beside_its_subject_is_one_warning(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "x").write_text("x\n")
    (tree / "x?info").write_text("not the record of x\n")
    (tree / "y?info").write_text("no y beside it: no warning\n")
    done = publish(tree, tmp_path / "store")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "x?info" in warnings[0] and "y?info" not in warnings[0]


def test_symlinks_that_leave_the_tree_or_dangle_are_one_warning_and_listed_in_json(
    tmp_path: Path,
) -> None:
    tree = tmp_path / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "target").write_text("t\n")
    (tree / "abs").symlink_to("/etc/hostname")
    (tree / "d" / "up").symlink_to("../../outside")
    (tree / "dangling").symlink_to("nothing-here")
    (tree / "d" / "fine").symlink_to("../target")
    done = publish(tree, tmp_path / "store", "--json")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1
    assert all(name in warnings[0] for name in ("abs", "d/up", "dangling"))
    assert "d/fine" not in warnings[0]
    listed = json.loads(done.stdout)["outside_links"]
    assert {(x["path"], x["target"]) for x in listed} == {
        ("abs", "/etc/hostname"), ("d/up", "../../outside"), ("dangling", "nothing-here"),
    }  # fmt: skip
    link = bound(tmp_path / "store", ARK)[0].entry("abs")
    assert link is not None and link.kind is Kind.SYMLINK  # published as it is


@pytest.mark.parametrize(
    ("name", "value"),
    [("user.ark.id", b"ark:99999/fake"), ("user.xet.hash", b"0" * 64), ("user.arkfs.cached", b"1")],
)
def test_a_source_attribute_in_arkfs_namespaces_is_refused_at_scan(
    tmp_path: Path, name: str, value: bytes
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_text("f\n")
    os.setxattr(tree / "f", name, value)
    done = publish(tree, tmp_path / "store")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and name in done.stderr and "f" in done.stderr
    assert not (tmp_path / "store").exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ark", "ark:12345/bad name"], "whitespace"),
        (["--ark", "ark:12345/bad\tname"], "whitespace"),
        (["--shoulder", "zz/x6"], "NAAN 'zz'"),
        (["--ark", "ark:zz/x6np1wh8k"], "NAAN 'zz'"),
        (["--shoulder", "12345/x 6"], "whitespace"),
    ],
)
def test_an_invalid_ark_or_shoulder_exits_2_in_one_line_before_the_scan(
    tmp_path: Path, args: list[str], message: str
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f").write_text("f\n")
    done = run_arkfs("publish", str(tree), *args, "--store", str(tmp_path / "store"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "store").exists()


def test_entries_the_manifest_refuses_at_the_end_are_a_publish_error_not_a_traceback(
    tmp_path: Path,
) -> None:
    """What scan did not check (here a caller's entries naming one path twice) and the
    manifest refuses at bind time is a PublishError (one line and exit 1 in the CLI), never
    a ManifestError traceback."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"one file\n")
    scanned = scan(tree)
    twice = scanned.found + scanned.found

    async def main() -> None:
        backend = EmbeddedBackend(LocalStore.open(tmp_path / "store"))
        try:
            erc = Erc(who="w", what="x", when="2026", where=ARK)
            await publish_tree(backend, ARK, twice, erc, previous=None, root=scanned.root)
        finally:
            await backend.aclose()

    with pytest.raises(PublishError, match="sorted by path, without repeats"):
        trio.run(main)


def test_hard_links_are_read_once_and_counted_as_stored_once(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(os.urandom(300_000))
    os.link(tree / "a", tree / "b")
    done = publish(tree, tmp_path / "store", "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert (record["files"], record["bytes"]) == (2, 600_000)
    assert (record["new_bytes"], record["dedup_bytes"]) == (300_000, 300_000)
    a, b = (bound(tmp_path / "store", ARK)[0].entry(p) for p in "ab")
    assert a is not None and b is not None and a.xet_hash == b.xet_hash and b.link == "a"


class _Refused(Exception):
    """What the check below raises when asked to (the CLI's raises BadInput: exit 2)."""


def test_the_scan_check_runs_before_any_read_and_only_on_failure_when_no_file_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The manifest checks (check_publishable) run before the first file is read; when
    the tree index knows every file nothing is read, and they run only if building the
    manifest fails, so its one-line message is still the one given."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a").write_bytes(b"one file\n")
    time.sleep(2 * RACY_NS / 1e9)  # older than the index's racy window: recorded
    opened: list[str] = []

    def source(path: str) -> BinaryIO:
        opened.append(path)
        return open(path, "rb")  # the publisher closes it

    monkeypatch.setattr(publisher, "open_source", source)
    checks: list[int] = []  # files opened when each check ran
    refuse = [False]

    def check(entries: Iterable[Entry]) -> None:
        checks.append(len(opened))
        if refuse[0]:
            raise _Refused("refused")

    scanned = scan(tree)
    where = tmp_path / "index"
    erc = Erc(who="w", what="x", when="2026", where=ARK)

    async def main() -> None:
        backend = EmbeddedBackend(LocalStore.open(tmp_path / "store"))

        async def again(found: list[Found], previous: Archive | None) -> None:
            index = TreeIndex(where)
            await publish_tree(
                backend, ARK, found, erc, previous=previous, root=scanned.root,
                tree_index=index, check=check,
            )  # fmt: skip

        try:
            await again(list(scanned.found), None)  # a publish consumes what it is given
            assert checks == [0] and len(opened) == 1  # checked, then read
            previous = await backend.archive(ARK)
            await again(list(scanned.found), previous)
            assert checks == [0] and len(opened) == 1  # nothing read, nothing checked
            refuse[0] = True
            with pytest.raises(_Refused):  # the manifest refuses it: the check says why
                await again(scanned.found * 2, previous)
            assert checks == [0, 1] and len(opened) == 1
        finally:
            await backend.aclose()

    trio.run(main)
