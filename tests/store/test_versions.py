"""ARK versions in a LocalStore: appended, never replaced, numbered 1..N however many bind."""

import dataclasses
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkfs.archive.record import VersionInfo
from arkfs.store.base import Binding
from arkfs.store.errors import NotFound, Rejected
from arkfs.store.local import LocalStore

REPO = Path(__file__).resolve().parents[2]
ARK = "ark:12345/x6np1wh8k"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    with LocalStore.open(tmp_path / "store") as s:
        yield s


def test_bind_appends_versions_and_keeps_every_one(store: LocalStore) -> None:
    first = Binding(ARK, b"\x81\xa1a\x01", "erc:\nwho: A\n", 1.5, files=1, bytes=10)
    second = Binding(ARK, b"\x80", "erc:\nwho: B\n", 9.0, message="fix", files=2, bytes=30)
    assert store.bind(first) == 1
    assert store.get_binding(ARK) == dataclasses.replace(first, version=1)
    assert store.bind(second) == 2
    assert store.bind(first) == 3  # the same content again is a new version too
    v1 = dataclasses.replace(first, version=1)
    v2 = dataclasses.replace(second, version=2, follows=1)
    v3 = dataclasses.replace(first, version=3, follows=2)
    assert [store.get_binding(ARK, n) for n in (1, 2, 3)] == [v1, v2, v3]
    assert store.get_binding(ARK) == v3
    with LocalStore.open(store.root, create=False) as again:
        assert [again.get_binding(ARK, n) for n in (1, 2, 3)] == [v1, v2, v3]
    assert store.check() == []


def test_list_versions_oldest_first_without_manifests(store: LocalStore) -> None:
    store.bind(Binding(ARK, b"m1", "erc:\n", 5.0, files=3, bytes=300))
    store.bind(Binding(ARK, b"m2", "erc:\n", 4.0, message="clock went back", bytes=7))
    store.bind(Binding("ark:12345/x6other", b"", "erc:\n", 6.0))
    assert store.list_versions(ARK) == [
        VersionInfo(ARK, 1, 5.0, "", None, 3, 300),
        VersionInfo(ARK, 2, 4.0, "clock went back", 1, 0, 7),
    ]


def test_unknown_ark_or_version_says_which_exist(store: LocalStore) -> None:
    for call in (
        lambda: store.get_binding(ARK),
        lambda: store.get_binding(ARK, 1),
        lambda: store.list_versions(ARK),
    ):
        with pytest.raises(NotFound, match=f"{ARK} is not bound in the store at"):
            call()
    store.bind(Binding(ARK, b"", "erc:\n", 1.0))
    with pytest.raises(NotFound, match=r"has no version 2 in the store at .*its only version, 1$"):
        store.get_binding(ARK, 2)
    store.bind(Binding(ARK, b"", "erc:\n", 2.0))
    for missing in (0, 3, -1):
        with pytest.raises(
            NotFound, match=rf"^{ARK} has no version {missing} .*one of its versions 1 to 2$"
        ):
            store.get_binding(ARK, missing)


def test_list_bindings_names_each_ark_once_and_stats_count_both(store: LocalStore) -> None:
    for ark, times in [("ark:12345/x6np1wh8q", 3), (ARK, 2), ("ark:67890/b", 1)]:
        for _ in range(times):
            store.bind(Binding(ark, b"", "erc:\n", 1.0))
    assert store.list_bindings() == [ARK, "ark:12345/x6np1wh8q", "ark:67890/b"]
    assert store.list_bindings("ark:12345/") == [ARK, "ark:12345/x6np1wh8q"]
    assert store.list_bindings(ARK) == [ARK]
    assert store.list_bindings("ark:1%") == []
    stats = store.stats()
    assert (stats.bindings, stats.versions) == (3, 6)


def test_bind_rejects_bad_bindings_and_changes_nothing(store: LocalStore) -> None:
    store.bind(Binding(ARK, b"", "erc:\n", 1.0))
    good = Binding(ARK, b"", "erc:\n", 2.0)
    bad = [
        (dataclasses.replace(good, ark=""), "non-empty ARK"),
        # the wrong types are the test
        (dataclasses.replace(good, manifest="text"), "manifest bytes"),  # type: ignore[arg-type]
        (dataclasses.replace(good, updated="now"), "Unix time"),  # type: ignore[arg-type]
        (dataclasses.replace(good, message=None), "a message"),  # type: ignore[arg-type]
        (dataclasses.replace(good, files=-1), "counts of files and bytes"),
        (dataclasses.replace(good, bytes=True), "counts of files and bytes"),
        (dataclasses.replace(good, version=2), "bind assigns them"),
        (dataclasses.replace(good, follows=1), "bind assigns them"),
    ]
    for binding, message in bad:
        with pytest.raises(Rejected, match=message):
            store.bind(binding)
    assert store.list_versions(ARK) == [VersionInfo(ARK, 1, 1.0, "", None, 0, 0)]


def assert_numbered_by_whoever_bound(store: LocalStore, got: dict[int, str]) -> None:
    """got maps each number a bind returned to its message: together they are 1..N."""
    assert sorted(got) == list(range(1, len(got) + 1))
    infos = store.list_versions(ARK)
    assert {i.version: i.message for i in infos} == got
    assert [i.follows for i in infos] == [None, *range(1, len(got))]
    assert store.check() == []


def test_concurrent_threads_get_distinct_consecutive_versions(store: LocalStore) -> None:
    got: dict[int, str] = {}
    errors: list[BaseException] = []
    go = threading.Barrier(4)

    def work(t: int) -> None:
        try:  # half share the store, half open their own connection to it
            s = store if t % 2 else LocalStore.open(store.root, create=False)
            go.wait()
            for i in range(10):
                message = f"thread {t} {i}"
                got[s.bind(Binding(ARK, b"", "erc:\n", 0.0, message=message))] = message
            if s is not store:
                s.close()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert_numbered_by_whoever_bound(store, got)


def test_concurrent_processes_get_distinct_consecutive_versions(store: LocalStore) -> None:
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "tests.store.bind_writer", str(store.root), ARK, name, "15"],
            cwd=REPO,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("p0", "p1")
    ]
    for child in children:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
    got: dict[int, str] = {}
    outputs = [child.communicate("go\n") for child in children]  # both wait for their go
    for name, child, (out, err) in zip(("p0", "p1"), children, outputs, strict=True):
        assert child.returncode == 0, err
        for i, number in enumerate(out.split()):
            got[int(number)] = f"{name} {i}"
    assert len(got) == 30
    assert_numbered_by_whoever_bound(store, got)


def test_check_finds_a_lost_version_and_a_wrong_follows(store: LocalStore) -> None:
    for _ in range(4):
        store.bind(Binding(ARK, b"", "erc:\n", 1.0))
    store.bind(Binding("ark:1/a", b"", "erc:\n", 1.0))
    with sqlite3.connect(store.root / "index.sqlite") as db:
        db.execute("DELETE FROM versions WHERE ark = ? AND version IN (2, 3)", (ARK,))
        db.execute("UPDATE versions SET follows = 7 WHERE ark = 'ark:1/a'")
    assert store.check() == [
        "ark:1/a version 1 follows 7, not None; restore the index from a backup",
        f"{ARK} is missing versions 2, 3 of 1 to 4; restore the index from a backup",
    ]
