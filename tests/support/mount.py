"""`arkfs mount` through the real CLI, always unmounted and its daemon gone afterwards."""

import json
import os
import re
import signal
import subprocess
import sys
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


def mount_stats(path: Path) -> dict[str, int]:
    """The counters of the mount at path (its root's user.arkfs.stats, as `arkfs stats`)."""
    return dict(json.loads(os.getxattr(path, "user.arkfs.stats")))


def wait_for_cache_writes(path: Path, timeout: float = 60.0) -> None:
    """Wait until the mount at path has written what it fetched to its disk cache."""
    deadline = time.monotonic() + timeout
    while mount_stats(path)["write_backlog_bytes"]:
        assert time.monotonic() < deadline, f"cache writes still pending after {timeout} s"
        time.sleep(0.05)


_PREAD = """
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    data = os.pread(fd, int(sys.argv[3]), int(sys.argv[2]))
except OSError as exc:
    print(exc.errno, file=sys.stderr)
    sys.exit(3)
sys.stdout.buffer.write(data)
"""


def pread_in_child(path: Path, offset: int, length: int, timeout: float = 120.0) -> bytes | int:
    """os.pread of path in a child process: the bytes, or the errno of the failure.

    A child, so a read that never returns fails the test (the timeout kills it) instead of
    hanging it: a thread blocked in a FUSE read cannot be interrupted.
    """
    done = subprocess.run(
        [sys.executable, "-c", _PREAD, str(path), str(offset), str(length)],
        capture_output=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode == 3:
        return int(done.stderr)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout


def drop_page_cache(path: Path) -> None:
    """Drop the kernel's cached pages of one file, so its next reads reach the mount."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
