"""The mount as a service: readiness over a real NOTIFY_SOCKET, SIGUSR2 switching the log to
debug and back at run time, and -v."""

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import make_tree, publish
from tests.support.cli import ARKFS
from tests.support.mount import arkfs_mount, cleanup
from tests.support.notify import notifying

ARK = "ark:12345/x6np1wh8k"
OPENED = "open inode"  # the mount's debug line for each open(2)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("service")
    publish(make_tree(base / "tree"), ARK, "--store", str(base / "store"))
    return base / "store"


def files(mnt: Path) -> Iterator[Path]:
    return (p for p in sorted((mnt / ARK).rglob("*")) if p.is_file())


def wait_for_log(log: Path, text: str, timeout: float = 30.0) -> str:
    """The log once it holds text (signals are handled in their own time)."""
    deadline = time.monotonic() + timeout
    while text not in (content := log.read_text()):
        assert time.monotonic() < deadline, f"no {text!r} in the log:\n{content}"
        time.sleep(0.05)
    return content


def test_sigusr2_switches_a_running_mount_to_debug_and_back(store: Path, tmp_path: Path) -> None:
    log = tmp_path / "mount.log"
    with arkfs_mount(tmp_path / "mnt", "--store", str(store), "--cache-dir",
                     str(tmp_path / "cache"), "--log", str(log)) as m:  # fmt: skip
        first, second, third = list(files(m.path))[:3]
        first.read_bytes()
        assert OPENED not in log.read_text()  # info by default
        os.kill(m.pid, signal.SIGUSR2)
        wait_for_log(log, "SIGUSR2: logging at DEBUG now")
        second.read_bytes()
        opened = wait_for_log(log, OPENED).count(OPENED)
        os.kill(m.pid, signal.SIGUSR2)
        wait_for_log(log, "SIGUSR2: logging at INFO now")
        third.read_bytes()
        assert log.read_text().count(OPENED) == opened


def test_v_logs_debug_from_the_start_and_sigusr2_quiets_it(store: Path, tmp_path: Path) -> None:
    log = tmp_path / "mount.log"
    with arkfs_mount(tmp_path / "mnt", "--store", str(store), "--cache-dir",
                     str(tmp_path / "cache"), "--log", str(log), "-v") as m:  # fmt: skip
        first, second = list(files(m.path))[:2]
        first.read_bytes()
        opened = wait_for_log(log, OPENED).count(OPENED)
        os.kill(m.pid, signal.SIGUSR2)  # from debug, SIGUSR2 goes to info
        wait_for_log(log, "SIGUSR2: logging at INFO now")
        second.read_bytes()
        assert log.read_text().count(OPENED) == opened


def test_the_mount_tells_systemd_it_is_ready_and_stopping(store: Path, tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    argv = [ARKFS, "mount", str(mnt), "--store", str(store), "--cache-dir",
            str(tmp_path / "cache"), "--foreground"]  # fmt: skip
    try:
        with notifying(argv) as lines:
            assert f"STATUS=serving arkfs:store at {mnt}" in lines, lines
            assert os.listdir(mnt / "ark:12345") == ["x6np1wh8k"]
    finally:
        cleanup(mnt, None)
