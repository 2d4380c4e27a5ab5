"""`arkfs mount` through the real CLI, always unmounted and its daemon gone afterwards."""

import errno
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
def arkfs_mount(path: Path, *args: str, allow_private: bool = True) -> Iterator[Mounted]:
    """`arkfs mount PATH ARGS...` (with --allow-private unless allow_private is False);
    yield the mount; unmount and stop the daemon at the end."""
    path.mkdir(parents=True, exist_ok=True)
    done = run_arkfs("mount", str(path), *args, allow_private=allow_private)
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
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
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


_TIMED_READ = """
import json, os, sys, time
path, out, block = sys.argv[1], sys.argv[2], int(sys.argv[3])
offsets = [int(o) for o in sys.argv[4].split(",")]
longest, error = 0.0, None
fd = os.open(path, os.O_RDONLY)
with open(out, "wb") as sink:
    for at in offsets:
        start = time.monotonic()
        try:
            data = os.pread(fd, block, at)
        except OSError as exc:
            error = exc.errno
        longest = max(longest, time.monotonic() - start)
        if error is not None:
            break
        sink.write(at.to_bytes(8, "little") + len(data).to_bytes(8, "little") + data)
print(json.dumps({"longest": longest, "errno": error}))
"""


@dataclass(frozen=True)
class TimedRead:
    """What a child's preads of a file got: the blocks read, by offset, until the first
    error (its errno), and the longest single read(2)."""

    blocks: dict[int, bytes]
    errno: int | None
    longest: float

    def wrong_bytes(self, expected: bytes) -> int:
        """Bytes read that differ from expected, or lie past its end. (A read cut short is
        no wrong byte: the kernel returns the pages it has when a later one fails.)"""
        wrong = 0
        for at, data in self.blocks.items():
            want = expected[at : at + len(data)]
            wrong += sum(a != b for a, b in zip(data, want, strict=False))
            wrong += max(0, len(data) - len(want))
        return wrong


BLOCK = 1 << 20


def timed_read(
    path: Path, scratch: Path, offsets: list[int] | None = None, timeout: float = 180.0
) -> TimedRead:
    """pread BLOCK bytes at each offset (default: the whole file in order) in a child
    process, timing each read(2); stop at the first error."""
    if offsets is None:
        offsets = list(range(0, max(path.stat().st_size, 1), BLOCK))
    out = scratch / f"timed-read-{os.getpid()}-{time.monotonic_ns()}"
    try:
        done = subprocess.run(
            [sys.executable, "-c", _TIMED_READ, str(path), str(out), str(BLOCK),
             ",".join(map(str, offsets))],
            capture_output=True, timeout=timeout, check=False, text=True,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        result = json.loads(done.stdout)
        blocks, raw, pos = {}, out.read_bytes(), 0
        while pos < len(raw):
            at, n = (int.from_bytes(raw[p : p + 8], "little") for p in (pos, pos + 8))
            blocks[at], pos = raw[pos + 16 : pos + 16 + n], pos + 16 + n
        return TimedRead(blocks, result["errno"], result["longest"])
    finally:
        out.unlink(missing_ok=True)


BACK_WITHIN = 10.0  # seconds: a server back at its URL serves the mount again by then


def pread_once_back(path: Path, offset: int, length: int, within: float = BACK_WITHIN) -> bytes:
    """pread_in_child until it reads instead of failing with EIO, as a server that just
    came back is asked again once the mount's fail-fast window is over; the bytes."""
    deadline = time.monotonic() + within
    while True:
        got = pread_in_child(path, offset, length)
        if not isinstance(got, int):
            return got
        assert got == errno.EIO, f"errno {got}"
        assert time.monotonic() < deadline, f"still EIO {within} s after the server came back"
        time.sleep(0.2)
