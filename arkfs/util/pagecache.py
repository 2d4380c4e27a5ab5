"""Page cache calls that only some systems have (Linux's posix_fadvise and RWF_NOWAIT;
macOS has neither): each is a no-op, or a miss, where the system lacks it, so `arkfs get`
and the Python API run there too."""

import os


def will_need(fd: int, start: int, length: int) -> None:
    """Ask for bytes [start, start + length) to be read ahead, where the system takes hints."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, start, length, os.POSIX_FADV_WILLNEED)


def let_go(fd: int, start: int, length: int) -> None:
    """Start writing bytes [start, start + length) back and drop them from the page cache,
    where the system takes hints."""
    if hasattr(os, "posix_fadvise"):
        os.posix_fadvise(fd, start, length, os.POSIX_FADV_DONTNEED)


def read_if_cached(fd: int, start: int, size: int) -> bytes | None:
    """Bytes [start, start + size) of an open file if all are in the page cache, else None,
    never waiting for the disk (RWF_NOWAIT; None wherever the system cannot tell)."""
    nowait = getattr(os, "RWF_NOWAIT", None)
    if nowait is None:
        return None
    buf = bytearray(size)
    try:
        got = os.preadv(fd, [buf], start, nowait)
    except OSError:  # EAGAIN: not all cached
        return None
    return bytes(buf) if got == size else None
