"""Crash-safe file writes: a temp file in the same directory, fsync, rename, fsync the directory.

A writer holds an exclusive flock on its temp file until the rename. The kernel drops the
lock when the writer dies, even by SIGKILL, so a temp file nobody holds locked is a leftover
of an interrupted write, and can be removed while other processes keep writing to the store.
"""

import fcntl
import os
import secrets
from collections.abc import Iterable, Iterator
from pathlib import Path

from arkfs.util.direct import DirectFile

TEMP_PREFIX = ".tmp-"


def is_temp(name: str) -> bool:
    """Is name that of a temp file made by write_atomic?"""
    return name.startswith(TEMP_PREFIX)


def fsync_dir(path: Path) -> None:
    """Make the entries of directory path (creations, renames) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _locked_temp(directory: Path) -> tuple[int, Path]:
    """Create and flock a new temp file in directory; retry if a cleaner removed it first."""
    while True:
        path = directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink:
            return fd, path
        os.close(fd)  # a cleaner saw it unlocked between create and flock, and unlinked it


def write_atomic(
    path: Path,
    data: bytes | memoryview | Iterable[bytes | memoryview],
    durable: bool = True,
    direct: bool = False,
) -> None:
    """Replace path with data (or its parts, one after another, never joined in memory: a
    generator's as it makes them) so that a crash leaves either the old file or the whole
    new one.

    durable=False skips the fsyncs: for caches, whose files are checked against their hash
    when read, a file torn by a power loss is detected and dropped, so syncing buys nothing.
    direct writes the bytes past the page cache where the file system allows
    (arkfs.util.direct): for files nobody is expected to read again soon.
    """
    fd, temp = _locked_temp(path.parent)
    try:
        parts = [data] if isinstance(data, bytes | memoryview) else data
        if direct:
            parts = list(parts)
            file = DirectFile(temp, sum(map(len, parts)), fd=fd)
            try:
                file.pwrite_parts(parts, 0)
            finally:
                file.close()
        else:
            with open(fd, "wb", closefd=False) as f:
                for part in parts:
                    f.write(part)
        if durable:
            os.fsync(fd)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    if durable:
        fsync_dir(path.parent)


def stale_temps(directory: Path) -> Iterator[Path]:
    """Temp files in directory whose writer is gone (nobody holds their lock)."""
    with os.scandir(directory) as entries:
        names = [e.name for e in entries if is_temp(e.name)]
    for name in names:
        path = directory / name
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            continue  # renamed or removed meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live writer holds it
        else:
            yield path
        finally:
            os.close(fd)


def remove_stale_temps(directory: Path) -> list[Path]:
    """Remove the stale temp files of directory; return their paths."""
    removed = []
    for path in stale_temps(directory):
        path.unlink(missing_ok=True)
        removed.append(path)
    return removed
