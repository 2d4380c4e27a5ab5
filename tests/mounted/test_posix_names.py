"""Names inside an archive are POSIX names, exact to the byte, as on the source tree.

One mount of an embedded store serves the module: a tree with a bare git repository, a
script, a non-UTF-8 name, a 255-byte name and an empty directory, published with the real
`arkfs publish` (issue 24: points 1, 3, 4, 5 and 8).
"""

import errno
import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.mount import Mounted, arkfs_mount

ARK = "ark:12345/x6np1wh8k"
LATIN1 = b"caf\xe9.txt"  # latin-1 'café.txt': not UTF-8
LONG = "n" * 251 + ".txt"  # 255 bytes, the longest name Linux allows
MANY = 300  # entries in many/: more than one readdir buffer holds


@dataclass(frozen=True)
class Env:
    tree: Path
    mount: Mounted

    @property
    def archive(self) -> Path:
        return self.mount.path / "ark:12345" / "x6np1wh8k"


def sh(*cmd: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(c) for c in cmd],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LC_ALL": "C", **env},
        check=False,
    )


def git(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """git with no user or system config, trusting every directory (the mount's owner)."""
    return sh(
        "git", "-c", "safe.directory=*", *args,
        GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
        GIT_AUTHOR_NAME="a", GIT_AUTHOR_EMAIL="a@example.org",
        GIT_COMMITTER_NAME="a", GIT_COMMITTER_EMAIL="a@example.org",
    )  # fmt: skip


def make_names_tree(root: Path, work: Path) -> Path:
    """hello.txt, text/hello.txt, an executable run.sh, a bare git repository repo.git
    (branch main), a latin-1 name, a 255-byte name and an empty directory."""
    (root / "text").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    (root / "text/hello.txt").write_text("hello again\n")
    (root / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (root / "run.sh").chmod(0o755)
    (root / "emptydir").mkdir()
    (root / "many").mkdir()
    for i in range(MANY):
        (root / f"many/entry-{i:03d}-with-a-long-name-to-fill-readdir.txt").write_text(f"{i}\n")
    with open(os.fsencode(root) + b"/" + LATIN1, "wb") as f:
        f.write(b"latin-1 name\n")
    (root / LONG).write_text("long name\n")
    work.mkdir()
    (work / "f").write_text("x\n")
    steps: list[list[str | Path]] = [["init", "-q", "-b", "main", work], ["-C", work, "add", "f"]]
    for step in steps:
        assert git(*step).returncode == 0
    assert git("-C", work, "commit", "-q", "-m", "one").returncode == 0
    assert git("init", "-q", "--bare", "-b", "main", root / "repo.git").returncode == 0
    assert git("-C", work, "push", "-q", root / "repo.git", "main").returncode == 0
    assert (root / "repo.git/refs/heads/main").is_file()  # a loose ref, as a push leaves it
    return root


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    base = tmp_path_factory.mktemp("names")
    store = base / "store"
    tree = make_names_tree(base / "tree", base / "work")
    publish(tree, ARK, "--store", str(store))
    with arkfs_mount(base / "mnt", "--store", str(store), "--cache-dir", str(base / "cache")) as m:
        yield Env(tree, m)


def stat_errno(path: Path | bytes) -> int:
    """0 if path stats, else the errno."""
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno or -1
    return 0


def test_names_inside_an_archive_match_byte_for_byte(env: Env) -> None:
    a = env.archive
    assert (a / "hello.txt").read_text() == "hello\n"
    for spelling in (
        "hel-lo.txt", "h-e-l-l-o.txt", "hello%2etxt", "hello%2Etxt", "HELLO.TXT",
        "text/hel-lo.txt", "te-xt/hello.txt", "text%2Fhello.txt", "run%2Esh", "repo%2Egit",
    ):  # fmt: skip
        assert stat_errno(a / spelling) == errno.ENOENT, spelling
    # The ARK's own levels keep their equivalent spellings, and so does @vN.
    root = env.mount.path
    same = {
        os.stat(p).st_ino
        for p in (a, root / "ark:/12345/x6-np1wh8k", root / "ARK:12345/x6np1-wh8k")
    }
    assert len(same) == 1
    assert (a / "@v1/hello.txt").read_text() == "hello\n"
    assert (root / "ark:/12345/x6-np1wh8k/@v1/text/hello.txt").read_text() == "hello again\n"


def test_git_rev_parse_of_a_ref_that_does_not_exist_fails_as_on_the_source(env: Env) -> None:
    for repo in (env.tree / "repo.git", env.archive / "repo.git"):
        good = git("--git-dir", repo, "rev-parse", "--verify", "refs/heads/main")
        assert good.returncode == 0, good.stderr
        bad = git("--git-dir", repo, "rev-parse", "--verify", "refs/heads/ma-in")
        assert bad.returncode != 0 and "fatal" in bad.stderr, (repo, bad.stdout)
    assert git("--git-dir", env.archive / "repo.git", "fsck", "--strict").returncode == 0


def test_a_directory_on_path_runs_only_the_commands_it_holds(env: Env, tmp_path: Path) -> None:
    (tmp_path / "bin").symlink_to(env.archive)  # PATH cannot hold the ':' of ark:12345
    path = f"{tmp_path / 'bin'}:/usr/bin:/bin"
    ran = sh("sh", "-c", "run.sh", PATH=path)
    assert ran.returncode == 0 and ran.stdout == "ran\n", ran.stderr
    missing = sh("sh", "-c", "r-un.sh", PATH=path)
    assert missing.returncode == 127 and missing.stdout == ""


def test_a_name_over_255_bytes_is_enametoolong(env: Env) -> None:
    a = env.archive
    assert (a / LONG).read_text() == "long name\n"
    assert stat_errno(a / (LONG + "x")) == errno.ENAMETOOLONG
    assert stat_errno(a / ("y" * 256)) == errno.ENAMETOOLONG
    assert stat_errno(a / "text" / ("y" * 300)) == errno.ENAMETOOLONG
    assert stat_errno(env.mount.path / "ark:12345" / ("y" * 256)) == errno.ENAMETOOLONG
    assert b"erc:" in (a / (LONG + "?info")).read_bytes()  # ?info of a 255-byte name


def ls_a(path: Path) -> list[tuple[int, str]]:
    """(inode, name) of each entry `ls -ai` prints, in its order."""
    done = subprocess.run(["ls", "-a", "-i", "-1", "-U", path], capture_output=True, check=False)
    assert done.returncode == 0, done.stderr
    rows = (line.split(None, 1) for line in done.stdout.splitlines())
    return [(int(i), os.fsdecode(n)) for i, n in rows]


def test_readdir_lists_dot_and_dotdot_with_their_inodes(env: Env) -> None:
    a = env.archive
    for directory in (a / "emptydir", a / "text", a / "many", a, a / "@v1", a / "@v1/text"):
        listed = ls_a(directory)
        names = [n for _, n in listed]
        assert names[:2] == [".", ".."], directory
        assert names.count(".") == names.count("..") == 1
        inodes = dict((n, i) for i, n in listed)
        assert inodes["."] == os.stat(directory).st_ino, directory
        assert inodes[".."] == os.stat(directory / "..").st_ino, directory
    assert ls_a(a / "emptydir")[2:] == []
    for directory in (a.parent, a.parent.parent, env.mount.path / "ark:"):
        names = [n for _, n in ls_a(directory)]
        assert names[:2] == [".", ".."] and names.count(".") == 1, directory
    many = [n for _, n in ls_a(a / "many")]  # resumed across readdir buffers
    assert len(many) == len(set(many)) == MANY + 2
    assert sorted(n for _, n in ls_a(a)[2:]) == sorted(os.listdir(a))


def test_non_utf8_names_work_in_content_xattrs_and_info(env: Env, tmp_path: Path) -> None:
    name = os.fsencode(env.archive) + b"/" + LATIN1
    with open(name, "rb") as f:
        assert f.read() == b"latin-1 name\n"
    values = {n: os.getxattr(name, n) for n in os.listxattr(name)}
    assert {"user.ark.id", "user.ark.erc", "user.ark.what", "user.xet.hash"} <= set(values)
    assert values["user.ark.id"].endswith(b"/caf%E9%2Etxt")
    with open(name + b"?info", "rb") as f:
        record = f.read()
    assert values["user.ark.erc"] == record and b"erc:" in record
    for odd in (b"ark:12345/" + LATIN1, b"ark:" + LATIN1, b"ark:12345/x6np1wh8k/" + LATIN1 + b"x"):
        with pytest.raises(FileNotFoundError):
            os.stat(os.fsencode(env.mount.path) + b"/" + odd)
    done = subprocess.run(
        ["rsync", "-aX", f"{env.archive}/", f"{tmp_path}/copy/"], capture_output=True, check=False
    )
    assert done.returncode == 0, done.stderr
    with open(os.fsencode(tmp_path / "copy") + b"/" + LATIN1, "rb") as f:
        assert f.read() == b"latin-1 name\n"


def test_statfs_never_shows_every_inode_used(env: Env) -> None:
    for _ in range(2):  # the same entries handed to the kernel twice count once
        os.listdir(env.archive / "many")
    s = os.statvfs(env.mount.path)
    assert s.f_files > 0 and 0 < s.f_ffree <= s.f_files and s.f_favail == s.f_ffree
    held = json.loads(os.getxattr(env.mount.path, "user.arkfs.stats"))["inodes"]
    assert MANY <= s.f_files - s.f_ffree <= held
    done = sh("df", "-i", env.mount.path)
    assert done.returncode == 0, done.stderr
    assert "100%" not in done.stdout.splitlines()[1]
