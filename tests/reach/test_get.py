"""`arkfs get` with the real CLI, on `arkfs serve` and on the embedded store: what it
writes is the source tree (bytes, modes, mtimes, symlinks, hard links); a rerun fetches nothing; an
interrupted get resumes; a flipped byte fails with one line and leaves no file."""

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arkfs.archive.manifest import Entry, Kind
from arkfs.cli.get import _one_line
from arkfs.download import PIECE, GetProgress, _hardlink, _set_xattrs
from tests.reach.conftest import ARK, BIG, TABLES, TOKEN, Published
from tests.support.archive import publish
from tests.support.cli import ARKFS, run_arkfs
from tests.support.faults import fault_proxy


def where(reach_archive: Published, how: str) -> list[str]:
    if how == "server":
        return ["--server", reach_archive.url, "--token", TOKEN]
    return ["--store", str(reach_archive.store)]


def same_tree(got: Path, truth: Path) -> None:
    """got holds what truth holds: names, bytes, modes, mtimes, user.* extended attributes
    and symlink targets (the top directory's too: an archive's root as published)."""
    names = sorted(p.relative_to(truth) for p in truth.rglob("*"))
    assert sorted(p.relative_to(got) for p in got.rglob("*")) == names
    for rel in [Path("."), *names]:
        a, b = os.lstat(got / rel), os.lstat(truth / rel)
        assert (a.st_mode, a.st_mtime_ns) == (b.st_mode, b.st_mtime_ns), rel
        assert user_xattrs(got / rel) == user_xattrs(truth / rel), rel
        if (truth / rel).is_symlink():
            assert os.readlink(got / rel) == os.readlink(truth / rel)
        elif (truth / rel).is_file():
            assert (got / rel).read_bytes() == (truth / rel).read_bytes(), rel


def user_xattrs(path: Path) -> dict[str, bytes]:
    """path's user.* extended attributes (a symlink's own: none on Linux)."""
    names = os.listxattr(path, follow_symlinks=False)
    return {n: os.getxattr(path, n, follow_symlinks=False) for n in names if n.startswith("user.")}


def get(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ARKFS, "get", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.parametrize("how", ["server", "store"])
def test_a_whole_archive_then_a_rerun_that_fetches_nothing(
    how: str, reach_archive: Published, tmp_path: Path
) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    done = get(ARK, *where(reach_archive, how), *cache, "--json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["dest"] == "x6np1wh8k" and summary["fetched"] == summary["bytes"] > 0
    same_tree(tmp_path / "x6np1wh8k", reach_archive.tree)
    (tmp_path / "x6np1wh8k/data/big.bin").write_bytes(b"wrong")  # wrong: fetched again
    again = json.loads(get(ARK, *where(reach_archive, how), *cache, "--json", cwd=tmp_path).stdout)
    assert again["fetched"] == 3 * 1024 * 1024 + 12345 and again["kept"] == summary["files"] - 1
    same_tree(tmp_path / "x6np1wh8k", reach_archive.tree)


def test_a_file_a_directory_and_a_version(reach_archive: Published, tmp_path: Path) -> None:
    opts = [*where(reach_archive, "store"), "--no-cache", "-q"]
    assert get(f"{ARK}/@v1/readme.txt", *opts, cwd=tmp_path).returncode == 0
    assert (tmp_path / "readme.txt").read_bytes() == reach_archive.first_readme
    assert get(f"{ARK}/c3", str(tmp_path / "c3-copy"), *opts).returncode == 0
    same_tree(tmp_path / "c3-copy", reach_archive.tree / "c3")
    missing = get(f"{ARK}/no/such", *opts, cwd=tmp_path)
    assert missing.returncode == 1 and len(missing.stderr.splitlines()) == 1
    for malformed in ("notanark", f"{ARK}/@vx/readme.txt"):  # the input's fault: exit 2
        bad = get(malformed, *opts, cwd=tmp_path)
        assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1, bad.stderr


def test_interrupted_then_resumed(reach_archive: Published, tmp_path: Path) -> None:
    out = tmp_path / "big.bin"
    record = tmp_path / ".big.bin.arkfs-part.done"
    with fault_proxy(reach_archive.url) as proxy:
        proxy.inject("slow", "xorb")
        args = ["--server", proxy.url, "--token", TOKEN, "--no-cache", "-j", "1", "-q"]
        proc = subprocess.Popen(
            [ARKFS, "get", f"{TABLES}/big.bin", str(out), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 120
            while not (record.exists() and record.read_text().strip()):
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
                time.sleep(0.05)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(60) == 130
        finally:
            proc.kill()
            proc.wait()
    assert not out.exists()
    pieces = len(record.read_text().split())
    assert 1 <= pieces < -(-BIG // PIECE)
    done = get(
        f"{TABLES}/big.bin", str(out), *where(reach_archive, "server"), "--no-cache", "--json"
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fetched"] == BIG - pieces * PIECE
    assert out.read_bytes() == (reach_archive.tables / "big.bin").read_bytes()
    assert not record.exists() and not (tmp_path / ".big.bin.arkfs-part").exists()


def test_a_flipped_byte_fails_with_one_line_and_no_file(
    reach_archive: Published, tmp_path: Path
) -> None:
    with fault_proxy(reach_archive.url) as proxy:
        proxy.inject("flip", "xorb")
        done = run_arkfs(
            "get", f"{TABLES}/big.bin", str(tmp_path / "big.bin"),
            "--server", proxy.url, "--token", TOKEN, "--no-cache",
        )  # fmt: skip
    assert done.returncode == 1
    said = [line for line in done.stderr.splitlines() if not line.startswith("get ")]
    assert len(said) == 1 and done.stderr.endswith(said[0] + "\n"), done.stderr  # the last word
    assert not (tmp_path / "big.bin").exists()


def test_the_chunk_cache_is_filled_and_used_and_no_cache_leaves_none(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with fault_proxy(reach_archive.url) as proxy:
        opts = ["--server", proxy.url, "--token", TOKEN, "-q"]
        cache = ["--cache-dir", str(tmp_path / "cache")]
        assert get(f"{TABLES}/big.bin", str(tmp_path / "one"), *opts, *cache).returncode == 0
        fetched = proxy.seen["xorb"]
        assert fetched > 0
        assert get(f"{TABLES}/big.bin", str(tmp_path / "two"), *opts, *cache).returncode == 0
        assert proxy.seen["xorb"] == fetched  # every chunk came from the cache
        assert (
            get(f"{TABLES}/big.bin", str(tmp_path / "three"), *opts, "--no-cache").returncode == 0
        )
        assert proxy.seen["xorb"] > fetched
    assert (tmp_path / "two").read_bytes() == (reach_archive.tables / "big.bin").read_bytes()
    assert (tmp_path / "three").read_bytes() == (tmp_path / "two").read_bytes()
    assert not (tmp_path / "xdg").exists()


def test_the_digest_is_fed_from_the_bytes_written_not_read_back(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A get's own pieces feed the SHA-256 as they land: the part file is never read."""
    from arkfs.api import Client
    from arkfs.download import GetProgress
    from arkfs.download import get as download

    read_back: list[str] = []
    pread = os.pread

    def watched(fd: int, n: int, at: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".arkfs-part"):
            read_back.append(f"{n}@{at}")
        return pread(fd, n, at)

    monkeypatch.setattr(os, "pread", watched)
    with Client(reach_archive.url, token=TOKEN, cache_dir=tmp_path / "cache") as client:
        out = download(client, f"{ARK}/data/big.bin", tmp_path / "big.bin", GetProgress(), 4)
    assert out.read_bytes() == (reach_archive.tree / "data/big.bin").read_bytes()
    assert read_back == []


def test_pieces_wait_for_a_slow_one_rather_than_be_read_back(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the first piece is slow, the others get at most AHEAD pieces ahead of the
    digest: none is dropped from memory and read back from the part file."""
    from arkfs import api, download
    from arkfs.api import Client
    from arkfs.download import GetProgress

    monkeypatch.setattr(download, "PIECE", 256 * 1024)
    monkeypatch.setattr(download, "AHEAD", 2)
    pread_parts = api.ArkFile.pread_parts

    def slow_first(self: api.ArkFile, offset: int, length: int) -> list[bytes | memoryview]:
        if offset == 0:
            time.sleep(1)
        return pread_parts(self, offset, length)

    monkeypatch.setattr(api.ArkFile, "pread_parts", slow_first)
    read_back: list[int] = []
    pread = os.pread

    def watched(fd: int, n: int, at: int) -> bytes:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".arkfs-part"):
            read_back.append(at)
        return pread(fd, n, at)

    monkeypatch.setattr(os, "pread", watched)
    with Client(reach_archive.url, token=TOKEN, cache_dir=tmp_path / "cache") as client:
        out = download.get(client, f"{ARK}/data/big.bin", tmp_path / "big.bin", GetProgress(), 4)
    assert out.read_bytes() == (reach_archive.tree / "data/big.bin").read_bytes()
    assert read_back == []


def test_a_resume_after_more_than_ahead_pieces_completes(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An earlier run wrote more pieces than AHEAD: the digest reads them back first, so
    the pieces after them are fetched (a wait counted from an unfed digest never ended)."""
    from arkfs import download
    from arkfs.api import Client
    from arkfs.download import GetProgress

    monkeypatch.setattr(download, "PIECE", 256 * 1024)
    monkeypatch.setattr(download, "AHEAD", 2)
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    written = range(0, 5 * 256 * 1024, 256 * 1024)  # pieces 0-4: more than AHEAD
    part = tmp_path / ".big.bin.arkfs-part"
    prefix = written[-1] + 256 * 1024  # the part file has the whole size, as a run leaves it
    part.write_bytes(truth[:prefix] + bytes(len(truth) - prefix))
    (tmp_path / ".big.bin.arkfs-part.done").write_text("".join(f"{at}\n" for at in written))
    progress = GetProgress()
    got: list[Path] = []

    def run() -> None:
        with Client(reach_archive.url, token=TOKEN, cache_dir=tmp_path / "cache") as client:
            got.append(
                download.get(client, f"{ARK}/data/big.bin", tmp_path / "big.bin", progress, 4)
            )

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(120)
    assert not worker.is_alive(), "the resumed get never finished"
    assert got and got[0].read_bytes() == truth
    assert progress.fetched == len(truth) - len(written) * 256 * 1024


def test_a_resumed_piece_that_is_wrong_fails_the_sha256_and_leaves_no_file(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pieces of an earlier run are bytes on disk no chunk hash has seen since: a file
    with any is checked whole against its SHA-256, so one wrong byte in them fails the get
    (no file under its name, no part file left) and the rerun fetches it all."""
    from arkfs import download
    from arkfs.api import Client
    from arkfs.download import DownloadError, GetProgress

    monkeypatch.setattr(download, "PIECE", 256 * 1024)
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    part, out = tmp_path / ".big.bin.arkfs-part", tmp_path / "big.bin"
    wrong = bytearray(truth[: 256 * 1024])
    wrong[1000] ^= 1
    part.write_bytes(bytes(wrong) + bytes(len(truth) - len(wrong)))
    (tmp_path / ".big.bin.arkfs-part.done").write_text("0\n")
    with Client(reach_archive.url, token=TOKEN, cache_dir=tmp_path / "cache") as client:
        with pytest.raises(DownloadError, match="SHA-256"):
            download.get(client, f"{ARK}/data/big.bin", out, GetProgress(), 4)
        assert not out.exists() and not part.exists()
        progress = GetProgress()
        assert download.get(client, f"{ARK}/data/big.bin", out, progress, 4) == out
    assert out.read_bytes() == truth and progress.fetched == len(truth)


def test_a_get_stopped_before_its_rename_is_finished_by_the_rerun(
    reach_archive: Published, tmp_path: Path
) -> None:
    """Every piece written and noted, but no rename (stopped during the fsync): the rerun
    checks the part file whole and renames it, fetching nothing."""
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    (tmp_path / ".big.bin.arkfs-part").write_bytes(truth)
    pieces = "".join(f"{at}\n" for at in range(0, len(truth), PIECE))
    (tmp_path / ".big.bin.arkfs-part.done").write_text(pieces)
    done = get(
        f"{ARK}/data/big.bin", *where(reach_archive, "store"), "--no-cache", "--json", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fetched"] == 0
    assert (tmp_path / "big.bin").read_bytes() == truth
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.bin"]


def test_a_file_into_a_directory_and_no_room_for_it(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file's DEST that is a directory gets the file inside it, as cp does; a get that
    would not fit where it goes stops before it fetches, with one line."""
    from arkfs import download
    from arkfs.api import Client
    from arkfs.download import DownloadError, GetProgress

    opts = [*where(reach_archive, "store"), "--no-cache", "-q"]
    (tmp_path / "into").mkdir()
    assert get(f"{ARK}/readme.txt", "into", *opts, cwd=tmp_path).returncode == 0
    truth = (reach_archive.tree / "readme.txt").read_bytes()
    assert (tmp_path / "into/readme.txt").read_bytes() == truth
    assert sorted(p.name for p in (tmp_path / "into").iterdir()) == ["readme.txt"]
    real = os.statvfs

    def small(path: object) -> os.statvfs_result:  # 1 MiB free, in 4 KiB blocks
        st = real(path)  # type: ignore[arg-type]
        return os.statvfs_result((*st[:4], 256, *st[5:]))

    monkeypatch.setattr(os, "statvfs", small)
    no_room = r"big\.bin: 3\.0 MiB to write, 1\.0 MiB free"
    with (
        Client(store=reach_archive.store, cache_dir=tmp_path / "cache", cache_size=0) as client,
        pytest.raises(DownloadError, match=no_room),
    ):
        download.get(client, f"{ARK}/data/big.bin", tmp_path / "big.bin", GetProgress(), 4)
    assert not any(p.name.endswith(".bin") or "arkfs-part" in p.name for p in tmp_path.iterdir())


@pytest.mark.unit
def test_a_selection_takes_what_hf_download_would() -> None:
    from arkfs.download import Selection

    assert Selection().everything and Selection().takes("any/thing")
    csv = Selection(include=("*.csv",))
    assert csv.takes("a.csv") and csv.takes("deep/er/b.csv") and not csv.takes("a.csv.gz")
    data = Selection(include=("data/",), exclude=("*.tmp",))
    assert data.takes("data/x/y") and not data.takes("data/x.tmp") and not data.takes("datax")
    assert not Selection(exclude=("*",)).takes("a")


def test_include_and_exclude_choose_paths_as_hf_download_does(
    reach_archive: Published, tmp_path: Path
) -> None:
    opts = [*where(reach_archive, "store"), "--no-cache", "-q"]
    args = ["--include", "*.txt", "--exclude", "many/", "--exclude", "*spaces*"]
    assert get(ARK, "copy", *opts, *args, cwd=tmp_path).returncode == 0
    got = sorted(
        p.relative_to(tmp_path / "copy").as_posix() for p in (tmp_path / "copy").rglob("*")
    )
    assert got == ["empty.txt", "readme.txt"]  # data/ held only what was excluded: no data/
    tree = reach_archive.tree
    assert (tmp_path / "copy/readme.txt").read_bytes() == (tree / "readme.txt").read_bytes()
    assert get(f"{ARK}/c3", "c3", *opts, "--include", "deep/", cwd=tmp_path).returncode == 0
    assert [p.name for p in (tmp_path / "c3").rglob("*") if p.is_file()] == ["leaf.bin"]
    none = get(ARK, "none", *opts, "--include", "*.nothing", cwd=tmp_path)
    assert none.returncode == 1 and none.stderr == (
        f"arkfs: nothing in {ARK}/@v2 matches --include/--exclude\n"
    )


def test_a_get_and_a_cached_reread_without_linux_only_calls(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As on macOS: no O_DIRECT, no posix_fadvise, no RWF_NOWAIT. The same bytes come,
    written through the ordinary descriptor, and come again from the chunk cache."""
    from arkfs import download
    from arkfs.api import Client
    from arkfs.download import GetProgress

    for name in ("O_DIRECT", "posix_fadvise", "RWF_NOWAIT"):
        monkeypatch.delattr(os, name)
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    with Client(store=reach_archive.store, cache_dir=tmp_path / "cache") as client:
        for name in ("first.bin", "again.bin"):
            download.get(client, f"{ARK}/data/big.bin", tmp_path / name, GetProgress(), 4)
            assert (tmp_path / name).read_bytes() == truth
        with client.open(f"{ARK}/data/big.bin") as f:  # small reads: the cache's at-hand path
            assert [f.read(4096) for _ in range(3)] == [
                truth[i : i + 4096] for i in (0, 4096, 8192)
            ]


def test_dest_dash_writes_one_file_to_stdout(reach_archive: Published, tmp_path: Path) -> None:
    opts = where(reach_archive, "server")
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    done = subprocess.run(
        [ARKFS, "get", f"{ARK}/data/big.bin", "-", *opts], capture_output=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout == truth and done.stderr == b""
    head = subprocess.run(
        f"{ARKFS} get {ARK}/data/big.bin - {' '.join(opts)} | head -c 10; exit ${{PIPESTATUS[0]}}",
        shell=True, executable="/bin/bash", capture_output=True, timeout=300,
    )  # fmt: skip
    assert (head.returncode, head.stdout, head.stderr) == (1, truth[:10], b"")  # quiet, as cat
    folder = get(f"{ARK}/c3", "-", *opts)
    assert folder.returncode == 2 and "is a directory" in folder.stderr and folder.stdout == ""


GET_AND_LIST_MODULES = """
import json, sys
from arkfs.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert not exc.code, exc.code
print(json.dumps(sorted(name for name, module in sys.modules.items() if module)))
"""


def test_a_get_from_a_server_loads_neither_httpxs_cli_nor_a_store(
    reach_archive: Published, tmp_path: Path
) -> None:
    """What a download from a server does not need is not imported: httpx's own command
    line (click, pygments), the embedded store and its archive service, FUSE (pyfuse3,
    the handlers, the inode table, the mount's daemon)."""
    args = [f"{ARK}/data/big.bin", str(tmp_path / "big.bin"), *where(reach_archive, "server")]
    done = subprocess.run(
        [sys.executable, "-c", GET_AND_LIST_MODULES, "get", *args, "-q", "--no-cache"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    modules = json.loads(done.stdout.splitlines()[-1])
    assert (tmp_path / "big.bin").read_bytes() == (reach_archive.tree / "data/big.bin").read_bytes()
    assert "httpx" in modules
    unneeded = (
        *("httpx._main", "click", "pygments", "arkfs.backend.embedded", "arkfs.store.local"),
        *("pyfuse3", "arkfs.mount.fuse", "arkfs.mount.names.namespace", "arkfs.mount.daemon"),
    )
    assert [m for m in unneeded if m in modules] == []


def test_hard_links_and_extended_attributes_come_back_as_the_mount_shows_them(
    tmp_path: Path,
) -> None:
    """Three names of one inode (one in a subdirectory) come back as one inode of three
    links, fetched once; with only one name taken, that name is a file of its own. The
    user.* attributes of files, directories and the root come back too (same_tree)."""
    tree, store = tmp_path / "tree", tmp_path / "store"
    (tree / "sub").mkdir(parents=True)
    (tree / "a.bin").write_bytes(os.urandom(300_000))
    os.link(tree / "a.bin", tree / "b.bin")
    os.link(tree / "a.bin", tree / "sub/c.bin")
    (tree / "plain.txt").write_text("not linked\n")
    os.setxattr(tree / "a.bin", "user.checksum", b"\x00\xffbinary")
    os.setxattr(tree / "plain.txt", "user.xdg.origin.url", b"https://example.org/plain")
    os.setxattr(tree / "sub", "user.note", b"a directory's")
    os.setxattr(tree, "user.root", b"the root's")
    os.utime(tree / "sub", ns=(10**18, 10**18))  # the attributes left mtimes as they were
    os.utime(tree, ns=(10**18, 10**18))
    publish(tree, "ark:12345/x6links", "--store", str(store))
    opts = ["--store", str(store), "--no-cache", "--json"]
    done = get("ark:12345/x6links", str(tmp_path / "got"), *opts)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["files"] == 4 and summary["fetched"] == 300_000 + len("not linked\n")
    same_tree(tmp_path / "got", tree)
    names = [tmp_path / "got" / n for n in ("a.bin", "b.bin", "sub/c.bin")]
    assert len({os.stat(n).st_ino for n in names}) == 1 and os.stat(names[0]).st_nlink == 3
    assert os.stat(tmp_path / "got/plain.txt").st_nlink == 1
    again = json.loads(get("ark:12345/x6links", str(tmp_path / "got"), *opts).stdout)
    assert again["fetched"] == 0  # a rerun finds every name in place
    one = get("ark:12345/x6links", str(tmp_path / "one"), *opts, "--include", "sub/*")
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["fetched"] == 300_000
    got = tmp_path / "one/sub/c.bin"
    assert got.read_bytes() == (tree / "a.bin").read_bytes() and got.stat().st_nlink == 1


@pytest.mark.unit
def test_where_no_link_can_be_made_a_hard_link_is_a_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system that makes no hard links (EXDEV, EPERM, ...) gets a copy of the
    fetched file, with the entry's mode and mtime, under its name at once."""
    source = tmp_path / "a.bin"
    source.write_bytes(b"checked bytes")
    entry = Entry("b.bin", Kind.FILE, 13, 0o640, 1_234_567_890_123_456_789, link="a.bin")

    def refuse(*args: object) -> None:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", refuse)
    _hardlink(entry, source, tmp_path / "b.bin")
    copy = (tmp_path / "b.bin").stat()
    assert (tmp_path / "b.bin").read_bytes() == b"checked bytes" and copy.st_nlink == 1
    assert (stat.S_IMODE(copy.st_mode), copy.st_mtime_ns) == (0o640, 1_234_567_890_123_456_789)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "b.bin"]


@pytest.mark.unit
def test_a_file_system_that_keeps_no_extended_attributes_is_counted_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """setxattr refused (ENOTSUP): the entry is counted for the command's warning, and
    attributes already in place are not set again."""
    path = tmp_path / "f"
    path.write_bytes(b"x")
    progress = GetProgress()
    _set_xattrs(path, (("user.a", b"1"),), progress)
    assert os.getxattr(path, "user.a") == b"1" and progress.xattrs_lost == 0

    def refuse(*args: object) -> None:
        raise OSError(errno.ENOTSUP, "Operation not supported")

    monkeypatch.setattr(os, "setxattr", refuse)
    _set_xattrs(path, (("user.a", b"1"),), progress)  # in place: not set again
    assert progress.xattrs_lost == 0
    _set_xattrs(path, (("user.a", b"1"), ("user.b", b"2")), progress)
    assert progress.xattrs_lost == 1
    monkeypatch.delattr(os, "setxattr")  # a system without them (macOS)
    _set_xattrs(path, (("user.a", b"1"),), progress)
    _set_xattrs(path, (), progress)  # nothing to keep: nothing lost
    assert progress.xattrs_lost == 2


def test_a_file_goes_into_a_dest_ending_in_a_slash_and_missing_directories_are_made(
    reach_archive: Published, tmp_path: Path
) -> None:
    """DEST `new/dir/` is a directory to put the file in, as `aws s3 cp` reads it, and a
    DEST whose directories are missing gets them, as `hf download --local-dir` makes them."""
    opts = [*where(reach_archive, "store"), "--no-cache", "-q"]
    truth = (reach_archive.tree / "readme.txt").read_bytes()
    done = get(f"{ARK}/readme.txt", "new/dir/", *opts, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new/dir/readme.txt").read_bytes() == truth
    done = get(f"{ARK}/readme.txt", "other/deeper/renamed.txt", *opts, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "other/deeper/renamed.txt").read_bytes() == truth
    (tmp_path / "plain").write_text("a file, not a directory")
    blocked = get(f"{ARK}/readme.txt", "plain/x.txt", *opts, cwd=tmp_path)
    assert blocked.returncode == 1 and len(blocked.stderr.splitlines()) == 1, blocked.stderr


def test_a_dry_run_lists_what_a_get_would_fetch_and_writes_nothing(
    reach_archive: Published, tmp_path: Path
) -> None:
    """--dry-run checks a local copy: a file changed and a file removed are listed, the
    rest counted in place, and nothing is written."""
    opts = [*where(reach_archive, "store"), "--no-cache"]
    fresh = get(ARK, str(tmp_path / "none"), *opts, "--dry-run", "--json")
    assert fresh.returncode == 0, fresh.stderr
    assert not (tmp_path / "none").exists()
    files = [p for p in reach_archive.tree.rglob("*") if p.is_file() and not p.is_symlink()]
    assert json.loads(fresh.stdout)["bytes_to_fetch"] == sum(p.stat().st_size for p in files)
    copy = tmp_path / "copy"
    assert get(ARK, str(copy), *opts, "-q").returncode == 0
    (copy / "readme.txt").write_bytes(b"changed")
    (copy / "c3/s5.v7.xsl").unlink()
    before = sorted((p, p.stat().st_mtime_ns) for p in copy.rglob("*"))
    plan = json.loads(get(ARK, str(copy), *opts, "--dry-run", "--json").stdout)
    todo = {(t["do"], Path(t["path"]).relative_to(copy).as_posix()) for t in plan["todo"]}
    assert todo == {("fetch", "readme.txt"), ("fetch", "c3/s5.v7.xsl")}
    names = [p for p in reach_archive.tree.rglob("*") if not p.is_dir() or p.is_symlink()]
    assert plan["in_place"] == len(names) - 2
    lines = get(ARK, str(copy), *opts, "--dry-run").stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith("fetch") and lines[1].startswith("fetch")
    assert "2 to fetch or link" in lines[2] and f"{plan['in_place']} in place" in lines[2]
    assert sorted((p, p.stat().st_mtime_ns) for p in copy.rglob("*")) == before


@pytest.mark.unit
def test_a_name_is_shown_on_one_line_as_ls_b_shows_it() -> None:
    """A dry run's path lines: a newline, a backslash and a byte that is no UTF-8 escaped."""
    name = Path(os.fsdecode(b"dir/new\nline \\ caf\xe9 \xc3\xa9"))
    assert _one_line(name) == "dir/new\\nline \\\\ caf\\xe9 \u00e9"
