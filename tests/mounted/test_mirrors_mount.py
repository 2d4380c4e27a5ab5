"""Mirrors: two `arkfs serve` holding the same archive behind one [naans] entry. A copy
(`cp`) survives one mirror dying under it; a mirror that flips bytes is caught, named and
avoided, and no wrong byte is read."""

import random
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.archive import MIB, write_big_file
from tests.support.archive import publish as publish_tree
from tests.support.cli import run_arkfs
from tests.support.faults import Proxy, fault_proxy
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


MANY = "ark:12345/x6many200"
FILES = 200
CAS = ("reconstruction", "xorb", "footer")  # the request kinds a read sends


def cas_requests(proxy: Proxy) -> int:
    seen = proxy.seen
    return sum(seen[k] for k in CAS)


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirrors]:
    """Two mirrors of a 200-file archive (files of 8 to 64 KiB, two of equal size)."""
    base = tmp_path_factory.mktemp("many")
    (base / "tokens").write_text("writer write\n")
    tree = base / "tree"
    tree.mkdir()
    rng = random.Random(23)
    for i in range(FILES):
        (tree / f"f{i:03}.bin").write_bytes(rng.randbytes(rng.randrange(8, 64) * 1024))
    (tree / "twin.bin").write_bytes(rng.randbytes(40_000))  # the size of f000's twin below
    (tree / "f000.bin").write_bytes(rng.randbytes(40_000))
    extra = ("--open-read", "--tokens", str(base / "tokens"))
    with Server(base / "a", *extra) as a, Server(base / "b", *extra) as b:
        for server in (a, b):
            publish_tree(tree, MANY, "--server", server.url, "--token", "writer")
        yield Mirrors(a, b, tree)


def xet_hash(path: Path) -> str:
    """The XET hash of a local file, as `arkfs xet hash` prints it."""
    done = run_arkfs("xet", "hash", str(path))
    assert done.returncode == 0, done.stderr
    return done.stdout.split()[0]


def same_tree(a: Path, b: Path) -> bool:
    return subprocess.run(["diff", "-r", str(a), str(b)], capture_output=True).returncode == 0


@pytest.mark.slow
def test_a_slow_mirror_listed_first_is_demoted(many: Mirrors, tmp_path: Path) -> None:
    """#23 item 10: a mirror whose replies are much slower than the other's is asked last;
    it got half the requests (a 212-file archive took 711 s with it first, 12-20 s without)."""
    with fault_proxy(many.a.url) as slow, fault_proxy(many.b.url) as fast:
        slow.inject("slow")
        with arkfs_mount(tmp_path / "mnt", *mount_args(tmp_path, slow.url, fast.url)) as m:
            start = time.monotonic()
            subprocess.run(["cp", "-r", str(m.path / MANY), str(tmp_path / "copy")], check=True)
            took = time.monotonic() - start
            log = m.log.read_text()
        assert same_tree(tmp_path / "copy", many.tree)
        to_slow, to_fast = cas_requests(slow), cas_requests(fast)
        print(f"cp -r of {FILES + 1} files, slow mirror first: {took:.1f} s; CAS requests "
              f"to the slow mirror {to_slow}, to the other {to_fast}")  # fmt: skip
        assert to_slow <= to_fast // 10, (to_slow, to_fast)
        assert f"mirror {slow.url} is slow" in log, log


@pytest.mark.slow
def test_a_mirror_that_sends_another_files_reconstruction_is_named_and_avoided(
    many: Mirrors, tmp_path: Path
) -> None:
    """#23 item 10: it was never named nor avoided. Now its reconstruction fails the trust
    chain, the mirror is named in one log line, the map is asked of the other, and the liar
    is asked for nothing more."""
    wanted, other = (xet_hash(many.tree / name) for name in ("f000.bin", "twin.bin"))
    with fault_proxy(many.a.url) as liar, fault_proxy(many.b.url) as good:
        liar.swap(wanted, other)  # asked for f000.bin, it answers with twin.bin's terms
        # The first reconstruction goes to the second mirror listed (they rotate).
        with arkfs_mount(tmp_path / "mnt", *mount_args(tmp_path, good.url, liar.url)) as m:
            target = m.path / MANY / "f000.bin"
            assert target.read_bytes() == (many.tree / "f000.bin").read_bytes()
            assert liar.seen["reconstruction"] == 1  # it was asked, and lied
            before = cas_requests(liar)
            for _ in range(3):
                assert target.read_bytes() == (many.tree / "f000.bin").read_bytes()
            subprocess.run(["cp", "-r", str(m.path / MANY), str(tmp_path / "copy")], check=True)
            log = m.log.read_text()
        assert same_tree(tmp_path / "copy", many.tree)
        assert cas_requests(liar) == before, (liar.seen, good.seen, log)  # avoided since
        named = [line for line in log.splitlines() if f"mirror {liar.url} " in line]
        assert len(named) == 1 and "reconstruction" in named[0], log
        assert " ERROR " not in log, log  # no read failed: the map was asked of the other
