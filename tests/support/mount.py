"""`arkfs mount` through the real CLI, always unmounted and its daemon gone afterwards."""

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.cli import run_arkfs

STOP_TIMEOUT = 20.0


@dataclass(frozen=True)
class Mounted:
    """A live mount: where it is, the daemon's pid, and its log."""

    path: Path
    pid: int
    log: Path
    stderr: str  # what `arkfs mount` printed there: warnings


def is_mounted(path: Path) -> bool:
    """Is path a mountpoint? (Read from mountinfo, so a dead mount does not hang this.)"""
    target = str(path.resolve()).replace(" ", "\\040")
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == target for line in f)


def alive(pid: int) -> bool:
    """Is pid a running (not zombie) process?"""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid: int, timeout: float = STOP_TIMEOUT) -> bool:
    """Wait until pid has exited; False if it is still there after timeout."""
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def cleanup(path: Path, pid: int | None) -> None:
    """Unmount path (lazily if busy) and make sure the daemon is gone."""
    if is_mounted(path):
        done = subprocess.run(["fusermount3", "-u", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            subprocess.run(["fusermount3", "-uz", str(path)], capture_output=True, check=False)
    if pid is not None and not wait_gone(pid):
        os.kill(pid, signal.SIGKILL)
        wait_gone(pid)


@contextmanager
def arkfs_mount(path: Path, *args: str) -> Iterator[Mounted]:
    """`arkfs mount PATH ARGS...`; yield the mount; unmount and stop the daemon at the end."""
    path.mkdir(parents=True, exist_ok=True)
    done = run_arkfs("mount", str(path), *args)
    match = re.search(r"\(pid (\d+), log (.+)\)", done.stdout)
    pid = int(match[1]) if match else None
    try:
        assert done.returncode == 0 and match, f"mount failed: {done.stdout}{done.stderr}"
        assert pid is not None
        yield Mounted(path, pid, Path(match[2]), done.stderr)
    finally:
        cleanup(path, pid)
