"""'Download all' (`?tar`) from a real `arkfs serve`, fetched with curl and unpacked with tar:
the archive root, a directory and an older version unpack to exactly what was published;
damage found mid-stream cuts the reply short, and what arrived is a true prefix."""

import io
import os
import signal
import stat
import subprocess
import tarfile
from pathlib import Path

import httpx

from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.xorb import CHUNK_HEADER_SIZE
from tests.support.archive import bound, make_tree, publish
from tests.support.server import arkfs_server

ARK = "ark:b5072/t4r9z"
LONG = "l" * 120 + "/" + "n" * 150 + ".txt"  # past ustar's 100-byte name field: a pax header
UNICODE = "données/résumé ✓.txt"


def tree(root: Path) -> Path:
    """The edge-case tree of the mount tests, plus a long and a non-ASCII name."""
    make_tree(root)
    for rel in (LONG, UNICODE):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(rel)
    return root


def curl(url: str, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["curl", "-sS", "--fail", "-o", str(out), url], capture_output=True, text=True, timeout=120
    )


def unpacked(url: str, where: Path) -> Path:
    """Download url with curl and `tar -x` it into a new directory where; that directory."""
    where.mkdir()
    got = curl(url, where / "all.tar")
    assert got.returncode == 0, got.stderr
    done = subprocess.run(
        ["tar", "-x", "-f", "all.tar"], cwd=where, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    (where / "all.tar").unlink()
    return where


def same_tree(a: Path, b: Path) -> None:
    """diff -r finds no difference (symlinks compared as links), and modes agree."""
    done = subprocess.run(
        ["diff", "-r", "--no-dereference", str(a), str(b)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for p in a.rglob("*"):
        if not p.is_symlink():
            q = b / p.relative_to(a)
            assert p.stat().st_mode == q.stat().st_mode, p


def test_archive_directory_and_version_unpack_to_what_was_published(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("w write\n")
    src = tree(tmp_path / "src")
    serve = ("--tokens", str(tmp_path / "tokens"), "--open-read")
    with arkfs_server(tmp_path / "store", *serve) as (url, _):
        publish(src, ARK, "--server", url, "--token", "w")
        v1 = unpacked(f"{url}/{ARK}?tar", tmp_path / "v1")
        same_tree(src, v1 / "t4r9z-v1")
        head = httpx.head(f"{url}/{ARK}?tar", timeout=30)
        assert head.headers["content-type"] == "application/x-tar"
        whole = httpx.get(f"{url}/{ARK}?tar", timeout=60).content
        assert len(whole) == int(head.headers["content-length"]) and len(whole) % 10240 == 0
        assert whole.endswith(bytes(1024))  # the two zero blocks that end a tar
        assert "t4r9z-v1.tar" in head.headers["content-disposition"]
        data = unpacked(f"{url}/{ARK}/data?tar", tmp_path / "data")
        same_tree(src / "data", data / "data")
        (tmp_path / "named").mkdir()  # curl -OJ saves it under the name the server gives
        named = subprocess.run(
            ["curl", "-sS", "--fail", "-OJ", f"{url}/{ARK}/donn%C3%A9es?tar"],
            cwd=tmp_path / "named", capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert named.returncode == 0, named.stderr
        assert [p.name for p in (tmp_path / "named").iterdir()] == ["donn_es.tar"]
        (src / "readme.txt").write_text("changed in v2\n")
        (src / "data" / "big.bin").unlink()
        publish(src, ARK, "--server", url, "--token", "w")
        latest = unpacked(f"{url}/{ARK}?tar", tmp_path / "latest")
        same_tree(src, latest / "t4r9z-v2")
        old = unpacked(f"{url}/{ARK}/@v1?tar", tmp_path / "old")
        assert (old / "t4r9z-v1" / "data" / "big.bin").stat().st_size > 3_000_000
        same_tree(v1 / "t4r9z-v1", old / "t4r9z-v1")
        file_tar = httpx.get(f"{url}/{ARK}/readme%2Etxt?tar", timeout=30)
        assert file_tar.status_code == 400 and "no directory" in file_tar.text


def test_damage_mid_stream_cuts_the_tar_short_and_sends_no_wrong_byte(tmp_path: Path) -> None:
    src = tree(tmp_path / "src")
    store = tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    with arkfs_server(store, "--open-read") as (url, _):
        whole = httpx.get(f"{url}/{ARK}?tar", timeout=60).content
    manifest, _ = bound(store, ARK)
    late = manifest.entry("readme.txt")  # after data/big.bin's 3 MiB: sent once those are
    assert late is not None and late.xet_hash is not None
    with LocalStore.open(store, create=False) as s:
        last = s.get_file(late.xet_hash).terms[-1]
        lo, _ = s.xorb_footer(last.xorb_hash).packed_range(last.end - 1, last.end)
    name = hash_to_string(last.xorb_hash)
    path = store / "xorbs" / name[:2] / name
    data = bytearray(path.read_bytes())
    data[lo + CHUNK_HEADER_SIZE + 10] ^= 0xFF  # inside readme.txt's chunk
    path.write_bytes(bytes(data))
    with arkfs_server(store, "--open-read") as (url, proc):
        got = curl(f"{url}/{ARK}?tar", tmp_path / "cut.tar")
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log = proc.stderr.read()  # type: ignore[union-attr]
    assert got.returncode == 18, got.stderr  # curl: transfer closed with bytes remaining
    cut = (tmp_path / "cut.tar").read_bytes()
    assert 0 < len(cut) < len(whole) and whole.startswith(cut)
    assert "reply cut short" in log and "is damaged" in log


def test_the_tar_clears_setuid_setgid_and_sticky_bits_as_git_archive_does(tmp_path: Path) -> None:
    """#23 item 13: `tar -x` as root of a `?tar` made a setuid-root file of a published one."""
    src = tmp_path / "src"
    (src / "shared").mkdir(parents=True)
    (src / "tool").write_bytes(b"#!/bin/sh\n")
    (src / "shared" / "group").write_bytes(b"g\n")
    modes = {"tool": 0o4755, "shared/group": 0o2644, "shared": 0o3777, "": 0o755}
    for rel, mode in modes.items():
        os.chmod(src / rel, mode)
    store = tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    manifest, _ = bound(store, ARK)
    assert {e.path: e.mode for e in manifest.entries}["tool"] == 0o4755  # kept as published
    with arkfs_server(store, "--open-read") as (url, _):
        whole = httpx.get(f"{url}/{ARK}?tar", timeout=60).content
        out = unpacked(f"{url}/{ARK}?tar", tmp_path / "out") / "t4r9z-v1"
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        got = {m.name.partition("/")[2]: m.mode for m in tar.getmembers()}
    assert got == {rel: mode & 0o777 for rel, mode in modes.items()}
    assert os.getuid() != 0 or all(  # as root, tar -x keeps the modes it is given
        stat.S_IMODE((out / rel).stat().st_mode) == mode & 0o777 for rel, mode in modes.items()
    )


def test_hard_links_unpack_as_hard_links_of_one_copy(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "a.bin").write_bytes(os.urandom(200_000))
    os.link(src / "a.bin", src / "d" / "b.bin")
    os.link(src / "a.bin", src / "d" / "c.bin")
    store = tmp_path / "store"
    publish(src, ARK, "--store", str(store))
    with arkfs_server(store, "--open-read") as (url, _):
        whole = httpx.get(f"{url}/{ARK}?tar", timeout=60).content
        out = unpacked(f"{url}/{ARK}?tar", tmp_path / "out") / "t4r9z-v1"
        sub = unpacked(f"{url}/{ARK}/d?tar", tmp_path / "sub") / "d"
    same_tree(src, out)
    assert len(whole) < 2 * 200_000  # the bytes once, then two links
    with tarfile.open(fileobj=io.BytesIO(whole)) as tar:
        links = {m.name: m.linkname for m in tar.getmembers() if m.islnk()}
    assert links == {"t4r9z-v1/d/b.bin": "t4r9z-v1/a.bin", "t4r9z-v1/d/c.bin": "t4r9z-v1/a.bin"}
    inodes = {(out / rel).stat().st_ino for rel in ("a.bin", "d/b.bin", "d/c.bin")}
    assert len(inodes) == 1 and (out / "a.bin").stat().st_nlink == 3
    # a directory's tar, whose group's first file is outside it: its first there has the bytes
    assert (sub / "b.bin").read_bytes() == (src / "a.bin").read_bytes()
    assert (sub / "b.bin").stat().st_ino == (sub / "c.bin").stat().st_ino
