"""Opening a store of index schema 1 migrates it to schema 2: each binding becomes v1."""

import random
import signal
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

import arkfs.store.local
from arkfs.archive.manifest import Entry, Kind, build
from arkfs.archive.record import VersionInfo
from arkfs.store.base import Binding
from arkfs.store.errors import StoreError
from arkfs.store.local import LocalStore
from tests.store.schema1 import schema1_store

REPO = Path(__file__).resolve().parents[2]
A, B = "ark:12345/x6a", "ark:12345/x6b"


def manifest(ark: str, sizes: list[int]) -> bytes:
    """A manifest of a directory, a symlink, and files of sizes inside the directory."""
    files = [
        Entry(f"d/f{i}", Kind.FILE, size, 0o644, 0, bytes([i + 1]) * 32)
        for i, size in enumerate(sizes)
    ]
    others = [Entry("d", Kind.DIR, 0, 0o755, 0), Entry("l", Kind.SYMLINK, 1, 0o777, 0, target="d")]
    return build(ark, [*others, *files], created=1.0).to_msgpack()


OLD = [
    (A, manifest(A, [10]), "erc:\nwho: first\n", 100.0),
    (B, b"\x81\xa1a\x01", "erc:\n", 150.0),  # not a manifest: schema 1 never parsed them
    (A, manifest(A, [100, 250]), "erc:\nwho: second\n", 200.0),  # replaced the first
]


def index_of(root: Path) -> tuple[Any, ...]:
    """The schema version, the tables, and the bindings or versions, as SQLite reads them."""
    with closing(sqlite3.connect(root / "index.sqlite")) as db:
        version = db.execute("SELECT version FROM schema_version").fetchone()[0]
        tables = sorted(r[0] for r in db.execute("SELECT name FROM sqlite_master"))
        table = "bindings" if "bindings" in tables else "versions"
        rows = db.execute(f"SELECT * FROM {table} ORDER BY ark").fetchall()
    return version, tables, rows


def test_schema_1_bindings_become_version_1(tmp_path: Path) -> None:
    root = tmp_path / "store"
    schema1_store(root, OLD)
    assert index_of(root)[0] == 1
    with LocalStore.open(root, create=False) as store:
        version, tables, _ = index_of(root)
        assert version == 2 and "bindings" not in tables and "versions" in tables
        a1 = Binding(A, OLD[2][1], "erc:\nwho: second\n", 200.0, version=1, files=2, bytes=350)
        b1 = Binding(B, b"\x81\xa1a\x01", "erc:\n", 150.0, version=1)
        assert [store.get_binding(A), store.get_binding(A, 1), store.get_binding(B)] == [a1, a1, b1]
        assert store.list_bindings() == [A, B]
        assert (store.stats().bindings, store.stats().versions) == (2, 2)
        assert store.check() == []
        assert store.bind(Binding(A, manifest(A, [7]), "erc:\n", 300.0, files=1, bytes=7)) == 2
        assert store.get_binding(A, 1) == a1
    with LocalStore.open(root, create=False) as store:  # migrated once only
        assert store.list_versions(A) == [
            VersionInfo(A, 1, 200.0, "", None, 2, 350),
            VersionInfo(A, 2, 300.0, "", 1, 1, 7),
        ]


def test_a_failed_migration_leaves_schema_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "store"
    schema1_store(root, OLD)
    before = index_of(root)
    summarized: list[bytes] = []

    def disk_fails_on_the_second(manifest: bytes) -> tuple[int, int]:
        summarized.append(manifest)
        if len(summarized) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        return 0, 0

    monkeypatch.setattr(arkfs.store.local, "_manifest_summary", disk_fails_on_the_second)
    with pytest.raises(StoreError, match="disk I/O error; retry"):
        LocalStore.open(root, create=False)
    assert index_of(root) == before
    monkeypatch.undo()
    with LocalStore.open(root, create=False) as store:
        assert store.get_binding(A).files == 2


KILL_ON = """
import os, signal, sys
import arkfs.store.local as local
summarized = []
def summary(manifest):
    summarized.append(manifest)
    if len(summarized) == int(sys.argv[2]):
        os.kill(os.getpid(), signal.SIGKILL)
    return 0, 0
local._manifest_summary = summary
local.INDEX_CACHE_KIB = 1024  # smaller than the bindings: the migration must spill to the WAL
local.LocalStore.open(sys.argv[1])
"""


def test_sigkill_during_migration_leaves_schema_1(tmp_path: Path) -> None:
    root = tmp_path / "store"
    # Bindings of 64 KiB each: more than the child's 1 MiB page cache holds, so the migration spills
    # uncommitted pages into the WAL before it is killed, and recovery must drop them.
    old = [(f"ark:99999/m{i}", random.Random(i).randbytes(65536), "erc:\n", i) for i in range(48)]
    schema1_store(root, old)
    before = index_of(root)
    child = subprocess.run(
        [sys.executable, "-c", KILL_ON, str(root), "40"], cwd=REPO, capture_output=True
    )
    assert child.returncode == -signal.SIGKILL, child.stderr.decode()
    assert (root / "index.sqlite-wal").stat().st_size > 0
    assert index_of(root) == before
    with LocalStore.open(root, create=False) as store:
        assert store.stats().versions == 48
        assert store.get_binding("ark:99999/m7") == Binding(*old[7], version=1)
        assert store.check() == []
