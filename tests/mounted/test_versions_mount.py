"""Versions on real mounts, against `arkfs serve` and the embedded store: ARKDIR is the latest
version and ARKDIR/@vN version N, both read, copied and diffed as trees; a new version
shows up in a running mount after --metadata-ttl while open files keep theirs.

Each backend gets one archive published twice with the real CLI (v2 changes about 1% of
one file): the module's mount reads both versions. The TTL test publishes an archive of
its own, a third time while the mount runs.
"""

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from arkfs.ark.erc import Erc
from arkfs.publish.dedup import MIN_RUN_BYTES
from arkfs.store.local import LocalStore
from tests.support.archive import MIB, WHAT, WHO
from tests.support.cli import run_arkfs
from tests.support.mount import Mounted, arkfs_mount, drop_page_cache
from tests.support.server import arkfs_server

ARK = "ark:12345/x6vmnt"
TTL_ARK = "ark:12345/x6vttl"
TOKENS = "writer write\nreader read\n"
SERVER, STORE = "server", "store"
CHANGES = (1_000_000, 4_000_000, 7_000_000)  # 3 x 4 KiB of an 8 MiB file: ~0.15%, 3 places
WAIT = 120.0  # seconds: a hang guard while waiting for a new version, never a measure


@dataclass(frozen=True)
class Target:
    """Where archives are published and how a mount or HTTP client reaches them."""

    kind: str
    store: Path
    url: str | None  # SERVER: the server of store

    def publish(self, tree: Path, ark: str, *extra: str) -> str:
        where = ["--store", str(self.store)]
        if self.url is not None:
            where = ["--server", self.url, "--token", "writer"]
        done = run_arkfs("publish", str(tree), "--ark", ark, *where, *extra)
        assert done.returncode == 0, done.stderr
        return done.stdout

    def mount(self, scratch: Path, *extra: str) -> contextlib.AbstractContextManager[Mounted]:
        where = ["--store", str(self.store)]
        if self.url is not None:
            where = ["--server", self.url, "--token", "reader"]
        return arkfs_mount(scratch / "mnt", *where, "--cache-dir", str(scratch / "cache"), *extra)

    def xorb_bytes(self) -> int:
        with LocalStore.open(self.store, create=False) as store:
            return store.stats().xorb_bytes


@pytest.fixture(scope="module", params=[SERVER, STORE])
def target(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Target]:
    root = tmp_path_factory.mktemp(request.param)
    if request.param == STORE:
        yield Target(STORE, root / "store", None)
        return
    (root / "tokens").write_text(TOKENS)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        yield Target(SERVER, root / "store", url)


def make_tree(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "d").mkdir()
    (root / "d" / "a.txt").write_text("alpha\n")
    (root / "keep.txt").write_text("kept as it is\n")
    (root / "@home").write_text("a name starting with @\n")
    (root / "big.bin").write_bytes(os.urandom(8 * MIB))
    return root


def change(path: Path, offsets: tuple[int, ...]) -> None:
    with path.open("r+b") as f:
        for off in offsets:
            f.seek(off)
            f.write(os.urandom(4096))


@dataclass(frozen=True)
class Versions:
    target: Target
    v1: Path  # saved copies of the tree as published
    v2: Path
    added_bytes: int  # xorb bytes the store gained with v2


@pytest.fixture(scope="module")
def versions(target: Target, tmp_path_factory: pytest.TempPathFactory) -> Versions:
    """ARK published twice: v1 with metadata, v2 after a ~1% change with a message only."""
    root = tmp_path_factory.mktemp("trees")
    tree = make_tree(root / "tree")
    target.publish(tree, ARK, "--who", WHO, "--what", WHAT)
    shutil.copytree(tree, root / "v1", symlinks=True)
    before = target.xorb_bytes()
    change(tree / "big.bin", CHANGES)
    out = target.publish(tree, ARK, "--message", "big.bin changed in three places")
    assert f"published {ARK} as v2 (after v1)" in out
    shutil.copytree(tree, root / "v2", symlinks=True)
    return Versions(target, root / "v1", root / "v2", target.xorb_bytes() - before)


@pytest.fixture(scope="module")
def mounted(versions: Versions, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mounted]:
    with versions.target.mount(tmp_path_factory.mktemp("mnt")) as m:
        yield m


def sh(*cmd: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def test_the_archive_is_the_latest_and_at_v1_the_first(
    versions: Versions, mounted: Mounted, tmp_path: Path
) -> None:
    archive = mounted.path / ARK
    done = sh("diff", "-r", versions.v2, archive)
    assert done.returncode == 0, done.stdout[:2000]
    done = sh("diff", "-r", versions.v1, archive / "@v1")
    assert done.returncode == 0, done.stdout[:2000]
    assert sh("diff", "-r", versions.v2, archive / "@v2").returncode == 0
    for version, saved in (("@v1", versions.v1), (".", versions.v2)):
        copy = tmp_path / f"copy-{version}"
        assert sh("cp", "-r", archive / version, copy).returncode == 0
        assert sh("diff", "-r", saved, copy).returncode == 0, version
    # cd into a version: a relative path inside it reads that version.
    for name in ("big.bin", "d/a.txt"):
        assert sh("cmp", name, versions.v1 / name, cwd=archive / "@v1").returncode == 0, name


def test_versions_are_hidden_from_ls_and_cp_r_copies_one(mounted: Mounted, tmp_path: Path) -> None:
    archive = mounted.path / ARK
    listed = sh("ls", "-a", archive).stdout.split()
    assert sorted(listed) == [".", "..", "@home", "big.bin", "d", "keep.txt"]
    assert (archive / "@v1").is_dir() and (archive / "@v2").is_dir()
    assert not (archive / "@v3").exists()
    assert sorted(os.listdir(archive / "@v1")) == ["@home", "big.bin", "d", "keep.txt"]
    copy = tmp_path / "copy"
    assert sh("cp", "-r", archive, copy).returncode == 0
    assert sorted(os.listdir(copy)) == ["@home", "big.bin", "d", "keep.txt"]


def test_user_ark_versions_names_both(mounted: Mounted) -> None:
    done = sh("getfattr", "--only-values", "-n", "user.ark.versions", mounted.path / ARK)
    assert done.returncode == 0, done.stderr
    v1, v2 = done.stdout.splitlines()
    size = "8.0 MiB"
    assert v1.startswith("v1  ") and v1.endswith(f"  4 files  {size}"), v1
    assert v2.startswith("v2  ") and v2.endswith(
        f"  4 files  {size}  big.bin changed in three places"
    )


def test_each_version_has_its_own_info_and_xattrs(mounted: Mounted) -> None:
    archive = mounted.path / ARK
    latest = Erc.from_anvl((mounted.path / f"{ARK}?info").read_text())
    assert (latest.who, latest.what) == (WHO, WHAT)  # the republish had no --who: kept
    assert Erc.from_anvl((archive / "@v1?info").read_text()) == latest
    entry = Erc.from_anvl((archive / "@v1" / "d" / "a.txt?info").read_text())
    assert entry.where == f"{ARK}/@v1/d/a%2Etxt"
    assert Erc.from_anvl((archive / "d" / "a.txt?info").read_text()).where == f"{ARK}/d/a%2Etxt"
    assert (
        os.getxattr(archive / "@v1" / "big.bin", "user.ark.id") == f"{ARK}/@v1/big%2Ebin".encode()
    )
    assert os.getxattr(archive / "big.bin", "user.ark.id") == f"{ARK}/big%2Ebin".encode()
    assert os.getxattr(archive / "@v1", "user.ark.id") == f"{ARK}/@v1".encode()
    assert os.getxattr(archive / "@home", "user.ark.id") == f"{ARK}/%40home".encode()
    v1_hash = os.getxattr(archive / "@v1" / "big.bin", "user.xet.hash")
    assert v1_hash != os.getxattr(archive / "big.bin", "user.xet.hash")


def test_inode_numbers_differ_between_versions(mounted: Mounted) -> None:
    archive = mounted.path / ARK
    seen = {}
    for where in (archive, archive / "@v1", archive / "@v2"):
        for name in ("keep.txt", "d", "d/a.txt"):
            seen[where / name] = os.stat(where / name).st_ino
    assert len(set(seen.values())) == len(seen)
    assert os.stat(archive / "@v1").st_ino != os.stat(archive / "@v2").st_ino


def test_http_gives_each_versions_bytes(versions: Versions) -> None:
    target = versions.target
    with contextlib.ExitStack() as stack:
        url, headers = target.url, {"Authorization": "Bearer reader"}
        if url is None:  # the embedded store, served for the occasion
            url, _ = stack.enter_context(arkfs_server(target.store, "--open-read"))
        old = httpx.get(f"{url}/{ARK}/@v1/big.bin", headers=headers, timeout=60)
        new = httpx.get(f"{url}/{ARK}/big.bin", headers=headers, timeout=60)
    assert old.content == (versions.v1 / "big.bin").read_bytes()
    assert new.content == (versions.v2 / "big.bin").read_bytes()


def test_a_republish_stores_only_the_changed_chunks(versions: Versions) -> None:
    # Each 4 KiB change touches one or two chunks (up to 128 KiB each); short runs of
    # unchanged chunks around them may be sent again (Fragmentation Prevention).
    bound = len(CHANGES) * (2 * 128 * 1024 + MIN_RUN_BYTES)
    assert 0 < versions.added_bytes < bound, versions.added_bytes
    assert versions.added_bytes < (versions.v2 / "big.bin").stat().st_size // 10


def read_all(fd: int, size: int) -> bytes:
    """Every byte of an open file, read through the mount (its cached pages dropped)."""
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    return os.pread(fd, size + 1, 0)


def test_a_new_version_appears_after_the_ttl_and_open_files_keep_theirs(
    target: Target, tmp_path: Path
) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    data = {n: os.urandom(3 * MIB) for n in ("v1", "v2", "v3")}
    (tree / "f.bin").write_bytes(data["v1"])
    (tree / "gone.txt").write_text("removed in v3\n")
    target.publish(tree, TTL_ARK, "--who", WHO)
    (tree / "f.bin").write_bytes(data["v2"])
    target.publish(tree, TTL_ARK)
    with target.mount(tmp_path, "--metadata-ttl", "2") as m:
        archive = m.path / TTL_ARK
        fd = os.open(archive / "f.bin", os.O_RDONLY)
        try:
            assert read_all(fd, 3 * MIB) == data["v2"]
            (tree / "f.bin").write_bytes(data["v3"][:MIB] + data["v2"][MIB:])
            (tree / "gone.txt").unlink()
            (tree / "new.txt").write_text("added in v3\n")
            target.publish(tree, TTL_ARK, "--what", "third", "-m", "third")
            v3 = (tree / "f.bin").read_bytes()
            assert read_all(fd, 3 * MIB) == data["v2"]  # open across the publish: its version
            deadline = time.monotonic() + WAIT
            while (archive / "f.bin").read_bytes() != v3:
                assert time.monotonic() < deadline, "v3 never showed"
                time.sleep(0.2)
            assert read_all(fd, 3 * MIB) == data["v2"]  # and after the mount moved on
            assert sorted(os.listdir(archive)) == ["f.bin", "new.txt"]
            assert Erc.from_anvl((m.path / f"{TTL_ARK}?info").read_text()).what == "third"
            assert (archive / "@v2" / "f.bin").read_bytes() == data["v2"]
            versions = os.getxattr(archive, "user.ark.versions").decode().splitlines()
            assert [v.split()[0] for v in versions] == ["v1", "v2", "v3"]
            assert versions[2].endswith("  third")
        finally:
            os.close(fd)
        drop_page_cache(archive / "f.bin")
        assert (archive / "f.bin").read_bytes() == v3
