"""The mounted filesystem seen through real tools: ls, stat, find, cp, diff, getfattr, cat.

One mount of an embedded store serves the whole module: two archives published with
`arkfs publish`, one of them the edge-case tree of tests.support.archive.
"""

import errno
import hashlib
import json
import os
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from arkfs.archive.manifest import Kind, Manifest, entry_ark, entry_erc
from arkfs.ark.erc import Erc
from arkfs.ark.normalization import parse
from arkfs.xet.digest import digest_bytes
from arkfs.xet.hashing import hash_to_string
from tests.support.archive import MANY, PERSISTENCE, WHAT, WHO, bound, make_tree, publish
from tests.support.cli import run_arkfs
from tests.support.mount import Mounted, arkfs_mount, mount_stats

ARK = "ark:12345/x6np1wh8k"
OTHER = "ark:b1234/x7zz"
MIB = 1024 * 1024


@dataclass(frozen=True)
class Env:
    tree: Path
    mount: Mounted
    manifest: Manifest
    erc: Erc

    @property
    def root(self) -> Path:
        return self.mount.path

    @property
    def archive(self) -> Path:
        return self.root / "ark:12345" / "x6np1wh8k"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("fs")
    store = base / "store"
    tree = make_tree(base / "tree")
    publish(tree, ARK, "--store", str(store))
    other = base / "other"
    other.mkdir()
    (other / "hello.txt").write_text("hi\n")
    publish(other, OTHER, "--store", str(store))
    manifest, erc = bound(store, ARK)
    with arkfs_mount(base / "mnt", "--store", str(store), "--cache-dir", str(base / "cache")) as m:
        yield Env(tree, m, manifest, erc)


def sh(*cmd: str | Path) -> subprocess.CompletedProcess[str]:
    """Run a tool; capture its text output."""
    return subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C"},
        check=False,
    )


def lines(*cmd: str | Path) -> list[str]:
    done = sh(*cmd)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_ls_shows_naans_names_and_the_archive_tree(env: Env) -> None:
    assert lines("ls", "-1", env.root) == ["ark:12345", "ark:b1234"]
    assert lines("ls", "-1", env.root / "ark:12345") == ["x6np1wh8k"]
    assert lines("ls", "-1", env.root / "ark:b1234") == ["x7zz"]
    top = sorted(e.name for e in env.manifest.children(""))
    assert lines("ls", "-1", env.archive) == top
    assert lines("ls", "-1", env.root / "ark:") == ["12345", "b1234"]  # hidden, not listed


def test_readdir_of_a_large_directory_resumes_and_ends(env: Env) -> None:
    names = lines("ls", "-1", env.archive / "many")
    assert len(names) == MANY
    assert names == sorted(os.listdir(env.tree / "many"))


def test_stat_matches_the_manifest(env: Env) -> None:
    out = lines("find", env.archive, "-mindepth", "1", "-printf", r"%P\t%s\t%m\t%T@\t%y\t%n\n")
    seen = {}
    for line in out:
        path, size_s, mode_s, mtime_s, kind_s, nlink_s = line.split("\t")
        seen[path] = (
            int(size_s),
            int(mode_s, 8),
            int(Decimal(mtime_s) * 10**9),
            kind_s,
            int(nlink_s),
        )
    assert set(seen) == {e.path for e in env.manifest.entries}
    for e in env.manifest.entries:
        size, mode, mtime_ns, kind, nlink = seen[e.path]
        assert kind == {Kind.FILE: "f", Kind.DIR: "d", Kind.SYMLINK: "l"}[e.kind]
        assert mode == e.mode, e.path
        assert mtime_ns == e.mtime_ns, e.path
        if e.kind is Kind.SYMLINK:
            assert size == len(e.target or "")
        else:
            assert size == e.size, e.path
        if e.kind is Kind.DIR:
            assert nlink == 2 + sum(c.kind is Kind.DIR for c in env.manifest.children(e.path))
    big = env.manifest.entry("data/big.bin")
    assert big is not None
    blocks, blksize = lines("stat", "-c", "%b %o", env.archive / "data/big.bin")[0].split()
    assert int(blocks) == -(-big.size // 512)
    assert int(blksize) >= 128 * 1024


def test_cp_r_and_diff_r_find_identical_trees(env: Env, tmp_path: Path) -> None:
    assert sh("diff", "-r", env.tree, env.archive).returncode == 0
    copy = tmp_path / "copy"
    assert sh("cp", "-r", env.archive, copy).returncode == 0
    done = sh("diff", "-r", "--no-dereference", env.tree, copy)
    assert done.returncode == 0, done.stdout
    assert (copy / "data/big.bin").read_bytes() == (env.tree / "data/big.bin").read_bytes()


def test_reads_at_offsets(env: Env) -> None:
    data = (env.tree / "data/big.bin").read_bytes()
    for skip, count in ((0, 1), (100, 3), (767, 20), (len(data) // 4096, 5)):
        done = subprocess.run(
            ["dd", f"if={env.archive / 'data/big.bin'}", "bs=4096", f"skip={skip}",
             f"count={count}", "status=none"],
            capture_output=True, check=True, timeout=60,
        )  # fmt: skip
        assert done.stdout == data[skip * 4096 : (skip + count) * 4096]


def test_find_counts_every_kind(env: Env) -> None:
    by_kind = {k: sum(e.kind is k for e in env.manifest.entries) for k in Kind}
    assert len(lines("find", env.archive, "-type", "f")) == by_kind[Kind.FILE]
    assert len(lines("find", env.archive, "-type", "d")) == by_kind[Kind.DIR] + 1
    assert len(lines("find", env.archive, "-type", "l")) == by_kind[Kind.SYMLINK] == 1
    assert len(lines("find", env.root)) == 1 + 2 + 2 + len(env.manifest.entries) + 1


def xattrs(path: Path, *options: str) -> dict[str, str]:
    """getfattr -d -m - of path: name -> value (getfattr's quoted, escaped form)."""
    out = lines("getfattr", "--absolute-names", "-d", "-m", "-", *options, path)
    pairs = (line.split("=", 1) for line in out if "=" in line)
    return {name: value.strip('"') for name, value in pairs}


def xattr(path: Path, name: str) -> str:
    """One attribute's raw value."""
    return sh("getfattr", "--only-values", "-n", name, path).stdout


def test_getfattr_shows_the_erc_fields_and_hashes(env: Env) -> None:
    entry = env.manifest.entry("data/big.bin")
    assert entry is not None and entry.xet_hash is not None
    path = env.archive / "data/big.bin"
    attrs = xattrs(path)
    ark = str(entry_ark(parse(ARK), entry.path))
    assert set(attrs) == {
        "user.ark.id",
        "user.ark.erc",
        "user.ark.who",
        "user.ark.what",
        "user.ark.when",
        "user.ark.where",
        "user.ark.support.who",
        "user.ark.support.what",
        "user.ark.support.when",
        "user.xet.hash",
        "user.xet.sha256",
    }  # fmt: skip (user.arkfs.cached is volatile: answered by name, never listed)
    assert attrs["user.ark.id"] == ark == attrs["user.ark.where"]
    assert attrs["user.ark.who"] == WHO
    assert attrs["user.ark.what"] == f"{WHAT}: data/big.bin"
    assert attrs["user.ark.support.what"] == PERSISTENCE
    assert attrs["user.xet.hash"] == hash_to_string(entry.xet_hash)
    digest = hashlib.sha256((env.tree / "data/big.bin").read_bytes()).hexdigest()
    assert attrs["user.xet.sha256"] == digest
    assert 0.0 <= float(xattr(path, "user.arkfs.cached")) <= 1.0
    expected = entry_erc(env.erc, parse(ARK), entry).to_anvl()
    assert xattr(path, "user.ark.erc") == expected


def test_xattrs_of_directories_root_and_symlinks(env: Env) -> None:
    assert xattrs(env.archive)["user.ark.id"] == ARK
    assert xattr(env.archive, "user.ark.erc") == env.erc.to_anvl()
    c3 = xattrs(env.archive / "c3")
    assert c3["user.ark.id"] == f"{ARK}/c3"
    assert not any(n.startswith(("user.xet.", "user.arkfs.")) for n in c3)
    assert set(xattrs(env.root)) == set()  # user.arkfs.stats is volatile: by name only
    assert json.loads(xattr(env.root, "user.arkfs.stats"))["pid"] == env.mount.pid
    assert xattrs(env.archive / "link", "-h") == {}
    missing = sh("getfattr", "-n", "user.nope", env.archive / "readme.txt")
    assert missing.returncode != 0 and "No such attribute" in missing.stderr
    with pytest.raises(OSError) as caught:
        os.getxattr(env.archive / "readme.txt", "user.ark.nope")
    assert caught.value.errno == errno.ENODATA


def test_info_files_hold_the_erc_record(env: Env) -> None:
    readme = env.manifest.entry("readme.txt")
    assert readme is not None
    expected = entry_erc(env.erc, parse(ARK), readme).to_anvl()
    assert lines("cat", env.archive / "readme.txt?info") == expected.splitlines()
    assert lines("cat", env.archive / "readme.txt??") == expected.splitlines()
    assert Erc.from_anvl(sh("cat", env.archive / "c3?info").stdout).where == f"{ARK}/c3"
    root_info = env.root / "ark:12345" / "x6np1wh8k?info"
    assert sh("cat", root_info).stdout == env.erc.to_anvl()
    assert not any("?" in n for n in os.listdir(env.archive))
    assert sh("cat", env.archive / "nothere?info").returncode != 0


def inode(path: Path) -> int:
    return int(lines("stat", "-c", "%i", path)[0])


def test_equivalent_spellings_share_one_inode(env: Env) -> None:
    groups = [
        [
            env.root / "ark:12345/x6np1wh8k",
            env.root / "ark:12345/x6-np1wh8k",
            env.root / "ark:/12345/x6np1wh8k",
            env.root / "ark:/12345/x6-np1-wh8k",
        ],
        [
            env.root / "ark:b1234",
            env.root / "ark:B1234",
            env.root / "ARK:b1234",
            env.root / "ark:/B1234",
        ],
        [
            env.archive / "c3/s5.v7.xsl",
            env.root / "ark:/12345/x6-np1wh8k/c3/s5.v7.xsl",
        ],
        [env.archive / "readme.txt?info", env.archive / "readme.txt??"],
    ]
    numbers = [{inode(p) for p in group} for group in groups]
    assert all(len(n) == 1 for n in numbers)
    assert len(set.union(*numbers)) == len(groups)
    for other in (".readme.txt", "c3/s5%2Ev7%2Exsl", "read-me.txt"):  # names below are exact
        assert sh("stat", env.archive / other).returncode != 0, other


def test_writes_fail_with_erofs(env: Env) -> None:
    a = env.archive
    for cmd in (
        ["touch", a / "new.txt"],
        ["touch", a / "readme.txt"],
        ["mkdir", a / "newdir"],
        ["rm", a / "readme.txt"],
        ["rmdir", a / "emptydir"],
        ["mv", a / "readme.txt", a / "moved.txt"],
        ["ln", "-s", "x", a / "newlink"],
        ["chmod", "777", a / "readme.txt"],
        ["setfattr", "-n", "user.x", "-v", "1", a / "readme.txt"],
        ["sh", "-c", f"echo changed > '{a / 'readme.txt'}'"],
    ):
        done = sh(*cmd)
        assert done.returncode != 0 and "Read-only file system" in done.stderr, cmd
    with pytest.raises(OSError) as caught:
        os.open(a / "readme.txt", os.O_RDWR)
    assert caught.value.errno == errno.EROFS
    assert (a / "readme.txt").read_bytes() == (env.tree / "readme.txt").read_bytes()


def test_symlinks_and_unknown_names(env: Env) -> None:
    assert lines("readlink", env.archive / "link") == ["readme.txt"]
    assert lines("cat", env.archive / "link") == ["hello, archive"]
    for missing in ("ark:12345/nothere", "ark:99999/x", "notark", "ark:12345/x6np1wh8k/nope"):
        done = sh("ls", env.root / missing)
        assert "No such file or directory" in done.stderr, missing


def test_statfs_reports_large_blocks(env: Env) -> None:
    block, files = lines("stat", "-f", "-c", "%S %c", env.root)[0].split()
    assert int(block) == 1 << 20
    assert int(files) >= len(env.manifest.entries)


def test_stats_command_prints_numbers(env: Env) -> None:
    assert sh("cmp", env.tree / "data/big.bin", env.archive / "data/big.bin").returncode == 0
    done = run_arkfs("stats", str(env.root))
    assert done.returncode == 0, done.stderr
    assert "hit rate" in done.stdout and "bytes read" in done.stdout
    raw = run_arkfs("stats", "--json", str(env.root))
    data = json.loads(raw.stdout)
    assert data["pid"] == env.mount.pid
    assert data["reads"] > 0 and data["bytes_read"] >= 3 * 1024 * 1024
    assert isinstance(data["cache_bytes"], int)


def inodes(env: Env) -> int:
    return int(json.loads(os.getxattr(env.root, "user.arkfs.stats"))["inodes"])


def test_forget_drops_inodes_the_kernel_dropped(env: Env) -> None:
    lines("find", env.root)
    held = inodes(env)
    assert held > MANY
    try:
        Path("/proc/sys/vm/drop_caches").write_text("2\n")
    except OSError:
        pytest.skip("cannot drop the kernel's dentry cache here")
    for _ in range(100):  # forgets arrive asynchronously
        if inodes(env) < 10:
            break
        time.sleep(0.05)
    assert inodes(env) < 10
    assert len(lines("find", env.archive)) == len(env.manifest.entries) + 1


def test_a_small_read_hands_the_rest_of_its_chunk_to_the_page_cache(env: Env) -> None:
    """A 4 KiB read loads a whole chunk; the kernel gets its other pages, so the next small
    read in that chunk is answered from the page cache without asking the daemon."""
    path = env.archive / "data" / "big.bin"
    data = (env.tree / "data" / "big.bin").read_bytes()
    start = 0
    for _h, size in digest_bytes(data).chunks:  # a chunk of 32 KiB or more, past 1 MiB
        if start > MIB and size >= 32 * 1024:
            break
        start += size
    page = -(-start // 4096) * 4096
    offset, neighbour = page + 4096, page + 3 * 4096
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)  # no cached pages of this file
        assert os.pread(fd, 4096, offset) == data[offset : offset + 4096]
        deadline = time.monotonic() + 10
        while True:  # the pages are handed over by a detached task: let it land
            before = mount_stats(env.root)["reads"]
            assert os.pread(fd, 4096, neighbour) == data[neighbour : neighbour + 4096]
            if mount_stats(env.root)["reads"] == before:
                break
            assert time.monotonic() < deadline, "the neighbouring page never reached the cache"
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            assert os.pread(fd, 4096, offset) == data[offset : offset + 4096]
            time.sleep(0.2)
    finally:
        os.close(fd)
