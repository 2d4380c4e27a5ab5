"""Mirrors: two `arkfs serve` holding the same archive behind one [naans] entry. A copy
(`cp`) survives one mirror dying under it; a mirror that flips bytes is caught, named and
avoided, and no wrong byte is read."""

import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.archive import MIB, write_big_file
from tests.support.archive import publish as publish_tree
from tests.support.faults import fault_proxy
from tests.support.mount import arkfs_mount
from tests.support.server import Server

ARK = "ark:12345/x6mirrored"
BIG = "big.bin"
BIG_SIZE = 300 * MIB
PAUSE_AT = 64 * MIB


@dataclass(frozen=True)
class Mirrors:
    a: Server
    b: Server
    tree: Path


@pytest.fixture(scope="module")
def mirrors(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirrors]:
    base = tmp_path_factory.mktemp("mirrors")
    (base / "tokens").write_text("writer write\n")
    tree = base / "tree"
    tree.mkdir()
    (tree / "small.txt").write_text("in both mirrors\n")
    write_big_file(tree / BIG, BIG_SIZE, b"mirrors")
    extra = ("--open-read", "--tokens", str(base / "tokens"))
    with Server(base / "a", *extra) as a, Server(base / "b", *extra) as b:
        for server in (a, b):
            publish_tree(tree, ARK, "--server", server.url, "--token", "writer")
        yield Mirrors(a, b, tree)


def mount_args(tmp_path: Path, *urls: str) -> tuple[str, ...]:
    config = tmp_path / "config.toml"
    config.write_text("[naans]\n12345 = [" + ", ".join(f"'{u}'" for u in urls) + "]\n")
    return ("--config", str(config), "--cache-dir", str(tmp_path / "cache"))


def same_file(a: Path, b: Path) -> bool:
    return subprocess.run(["cmp", str(a), str(b)], capture_output=True).returncode == 0


@pytest.mark.slow
def test_a_copy_completes_from_the_other_mirror_when_one_dies(
    mirrors: Mirrors, tmp_path: Path
) -> None:
    with arkfs_mount(tmp_path / "mnt", *mount_args(tmp_path, mirrors.a.url, mirrors.b.url)) as m:
        src, dst = m.path / ARK / BIG, tmp_path / "copy.bin"
        copier = subprocess.Popen(["cp", str(src), str(dst)])
        try:
            # Freeze cp once it has copied PAUSE_AT, so the mirror dies mid-copy.
            deadline = time.monotonic() + 120
            while not (dst.exists() and dst.stat().st_size >= PAUSE_AT):
                assert copier.poll() is None and time.monotonic() < deadline, "no progress"
                time.sleep(0.002)
            copier.send_signal(signal.SIGSTOP)
            assert dst.stat().st_size < BIG_SIZE
            mirrors.a.stop()  # one mirror dies in the middle of the copy
            copier.send_signal(signal.SIGCONT)
            assert copier.wait(timeout=300) == 0
        finally:
            copier.kill()
            copier.wait()
            if mirrors.a.proc is None:
                mirrors.a.start()
        assert same_file(dst, mirrors.tree / BIG)
        assert "is unreachable" in m.log.read_text()


@pytest.mark.slow
def test_a_mirror_that_flips_bytes_is_named_and_avoided(mirrors: Mirrors, tmp_path: Path) -> None:
    with fault_proxy(mirrors.b.url) as proxy:
        proxy.inject("flip", "xorb")  # a byte of every xorb range it sends
        bad = proxy.url
        with arkfs_mount(tmp_path / "mnt", *mount_args(tmp_path, bad, mirrors.a.url)) as m:
            assert (m.path / ARK / "small.txt").read_text() == "in both mirrors\n"
            subprocess.run(["cp", str(m.path / ARK / BIG), str(tmp_path / "copy.bin")], check=True)
            log = m.log.read_text()
        assert same_file(tmp_path / "copy.bin", mirrors.tree / BIG)
        assert f"mirror {bad} sent" in log, log
