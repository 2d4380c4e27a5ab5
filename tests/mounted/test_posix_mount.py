"""What POSIX archivers keep, on a real mount of a real publish (embedded store), with the
source tree as the oracle: mtimes before 1970, hard links as one inode with its link
count, the source's user.* attributes beside arkfs's own, the root directory's mode and
mtime, and sparse files read back byte for byte (their holes as zeros). The JSON manifest
and landing page of `arkfs serve` show the same."""

import io
import os
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.cli import run_arkfs
from tests.support.mount import Mounted, arkfs_mount
from tests.support.server import arkfs_server

ARK = "ark:12345/x6posixm"
BEFORE_1970 = -315_619_200_123_456_789  # 1959-12-31 23:59:59.876543211
ROOT_MTIME = -1_000_000_000_000_000_001
SPARSE_HOLE = 9 * 1024 * 1024


def make_tree(tree: Path) -> Path:
    (tree / "d" / "e").mkdir(parents=True)
    (tree / "old").write_bytes(b"from the sixties\n")
    os.utime(tree / "old", ns=(BEFORE_1970, BEFORE_1970))
    (tree / "a").write_bytes(b"one inode, three names\n")
    os.link(tree / "a", tree / "d" / "b")
    os.link(tree / "a", tree / "d" / "e" / "c")
    (tree / "single").write_bytes(b"one name\n")
    os.setxattr(tree / "a", "user.color", b"blue")
    os.setxattr(tree / "single", "user.bytes", b"\xff\x00\xfe")
    os.setxattr(tree / "d", "user.dir", b"a directory's")
    os.setxattr(tree, "user.root", b"the root's")
    with open(tree / "sparse", "wb") as f:
        f.write(b"head")
        f.seek(SPARSE_HOLE)
        f.write(b"tail after a hole")
    tree.chmod(0o750)
    os.utime(tree, ns=(ROOT_MTIME, ROOT_MTIME))
    return tree


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    base = tmp_path_factory.mktemp("posix")
    tree = make_tree(base / "tree")
    done = run_arkfs("publish", "-q", str(tree), "--ark", ARK, "--store", str(base / "store"))
    assert done.returncode == 0, done.stderr
    yield tree, base / "store"


@pytest.fixture
def mounted(published: tuple[Path, Path], tmp_path: Path) -> Iterator[Mounted]:
    _, store = published
    with arkfs_mount(
        tmp_path / "mnt", "--store", str(store), "--cache-dir", str(tmp_path / "cache")
    ) as m:
        yield m


def test_mtimes_before_1970_and_the_root_show_as_in_the_tree(
    published: tuple[Path, Path], mounted: Mounted
) -> None:
    tree, _ = published
    root = mounted.path / ARK
    assert os.stat(root / "old").st_mtime_ns == os.stat(tree / "old").st_mtime_ns == BEFORE_1970
    st = os.stat(root)
    assert (st.st_mode & 0o7777, st.st_mtime_ns) == (0o750, ROOT_MTIME)
    assert os.stat(root / "@v1").st_mtime_ns == ROOT_MTIME


def test_hard_links_are_one_inode_with_their_link_count(
    published: tuple[Path, Path], mounted: Mounted
) -> None:
    root = mounted.path / ARK
    names = [root / "a", root / "d" / "b", root / "d" / "e" / "c"]
    stats = [os.stat(p) for p in names]
    assert len({s.st_ino for s in stats}) == 1 and {s.st_nlink for s in stats} == {3}
    assert os.stat(root / "single").st_nlink == 1
    assert os.stat(root / "single").st_ino != stats[0].st_ino
    shown = subprocess.run(
        ["stat", "-c", "%h %i", *map(str, names)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert len(set(shown)) == 1 and shown[0].startswith("3 ")
    found = subprocess.run(
        ["find", str(root), "-samefile", str(root / "d" / "b")],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert sorted(found) == sorted(map(str, names))
    assert all(p.read_bytes() == b"one inode, three names\n" for p in names)


def test_source_attributes_are_served_beside_arkfs_own(
    published: tuple[Path, Path], mounted: Mounted
) -> None:
    root = mounted.path / ARK
    assert os.getxattr(root / "a", "user.color") == b"blue"
    assert os.getxattr(root / "d" / "b", "user.color") == b"blue"  # one inode
    assert os.getxattr(root / "single", "user.bytes") == b"\xff\x00\xfe"
    assert os.getxattr(root / "d", "user.dir") == b"a directory's"
    assert os.getxattr(root, "user.root") == b"the root's"
    listed = os.listxattr(root / "single")
    assert "user.bytes" in listed and "user.ark.id" in listed and "user.xet.hash" in listed
    assert "user.root" in os.listxattr(root)


def test_a_sparse_file_reads_back_byte_identical(
    published: tuple[Path, Path], mounted: Mounted
) -> None:
    tree, _ = published
    data = (mounted.path / ARK / "sparse").read_bytes()
    fd = os.open(mounted.path / ARK / "sparse", os.O_RDONLY)
    try:  # no holes are reported: the README says they read as zeros
        assert os.lseek(fd, 0, os.SEEK_HOLE) == len(data)
        assert os.lseek(fd, 5, os.SEEK_DATA) == 5
    finally:
        os.close(fd)
    assert len(data) == SPARSE_HOLE + len(b"tail after a hole")
    assert data == (tree / "sparse").read_bytes()


def test_serve_shows_the_same_mtimes_links_attributes_and_root(
    published: tuple[Path, Path],
) -> None:
    _, store = published
    with arkfs_server(store, "--open-read") as (url, _):
        manifest = httpx.get(f"{url}/{ARK}", headers={"Accept": "application/json"}, timeout=30)
        page = httpx.get(f"{url}/{ARK}/", headers={"Accept": "text/html"}, timeout=30)
        whole = httpx.get(f"{url}/{ARK}?tar", timeout=60).content
    manifest = manifest.json()
    entries = {e["path"]: e for e in manifest["entries"]}
    assert entries["old"]["mtime_ns"] == BEFORE_1970
    assert entries["d/b"]["link"] == entries["d/e/c"]["link"] == "a"
    assert entries["a"]["xattrs"] == {"user.color": b"blue".hex()}
    assert (manifest["root"]["mode"], manifest["root"]["mtime_ns"]) == (0o750, ROOT_MTIME)
    assert page.status_code == 200 and "1959-12-31 23:59" in page.text
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        members = {m.name.partition("/")[2]: m for m in tar.getmembers()}
    assert int(members["old"].mtime) == BEFORE_1970 // 10**9 + 1  # whole seconds, truncated
    assert (members[""].mode, int(members[""].mtime)) == (0o750, ROOT_MTIME // 10**9 + 1)


def test_a_version_named_root_file_published_anyway_is_only_at_its_version(
    tmp_path: Path,
) -> None:
    """With --allow-version-names, a root file `@v1` is ARKDIR/@v1/@v1 only; a real file
    named `%40v1` beside it stays itself, never the `@v1` file."""
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "@v1").write_bytes(b"named like a version\n")
    (tree / "%40v1").write_bytes(b"a real percent name\n")
    ark = "ark:12345/x6posixv"
    store = tmp_path / "store"
    done = run_arkfs("publish", "-q", str(tree), "--ark", ark, "--store", str(store))
    assert done.returncode == 2 and "@v1" in done.stderr
    done = run_arkfs(
        "publish", "-q", str(tree), "--ark", ark, "--store", str(store), "--allow-version-names"
    )
    assert done.returncode == 0, done.stderr
    with arkfs_mount(tmp_path / "mnt", "--store", str(store), "--cache-dir", str(tmp_path / "c")):
        root = tmp_path / "mnt" / ark
        assert (root / "@v1").is_dir()
        assert (root / "@v1" / "@v1").read_bytes() == b"named like a version\n"
        assert (root / "%40v1").read_bytes() == b"a real percent name\n"
        assert sorted(os.listdir(root)) == ["%40v1"]
        assert sorted(os.listdir(root / "@v1")) == ["%40v1", "@v1"]


def test_a_mount_through_serve_shows_the_same(published: tuple[Path, Path], tmp_path: Path) -> None:
    tree, store = published
    with (
        arkfs_server(store, "--open-read") as (url, _),
        arkfs_mount(tmp_path / "mnt", "--server", url, "--cache-dir", str(tmp_path / "c")),
    ):
        root = tmp_path / "mnt" / ARK
        st = os.stat(root)
        assert (st.st_mode & 0o7777, st.st_mtime_ns) == (0o750, ROOT_MTIME)
        assert os.stat(root / "old").st_mtime_ns == BEFORE_1970
        a, c = os.stat(root / "a"), os.stat(root / "d" / "e" / "c")
        assert (a.st_ino, a.st_nlink) == (c.st_ino, 3)
        assert os.getxattr(root / "single", "user.bytes") == b"\xff\x00\xfe"
        assert (root / "sparse").read_bytes() == (tree / "sparse").read_bytes()
