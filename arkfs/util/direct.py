"""Big writes that skip the page cache (O_DIRECT) where the file system allows it.

A buffered write of a GiB copies it into page cache pages allocated for it, then charges
and writes them back: 0.3-1.2 s of CPU per GiB on the 2-core test VM, varying with how
the host backs the guest's freed memory. A direct write of the same bytes cost 0.05 s:
the device reads them from the writer's memory. It needs buffers, offsets and lengths
aligned to the device's blocks, so the parts are copied into an aligned buffer, reused
from write to write (by _gather.c, without the GIL), WINDOW bytes at a time, and an
unaligned tail goes through the ordinary descriptor. Where O_DIRECT is refused (tmpfs,
some network and FUSE file systems) every byte does.
"""

import contextlib
import errno
import mmap
import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from arkfs.util._gather import gather

ALIGN = 4096  # offsets, lengths and buffer addresses: a page covers any block size up to it
MIN_DIRECT = 256 * 1024  # smaller writes gain less than the copy into a buffer costs
# The most one aligned buffer holds: a write is staged and written a window at a time, so
# the buffers kept stay small. Whole 8 MiB packs had cost a mount 45-60 MiB of peak RSS,
# and a get's 16 MiB pieces about 100 MB; 2 MiB windows slowed a get (smaller writes, one
# at a time per writer), 4 MiB ones ran as fast as whole pieces.
WINDOW = 4 * 1024 * 1024
SPARE_BUFFERS = 8  # aligned buffers kept for the next writes (one per writer at once)
IOV_MAX = os.sysconf("SC_IOV_MAX")  # buffers one pwritev takes
Buffer = bytes | bytearray | memoryview

_spare: list[mmap.mmap] = []
_spare_lock = threading.Lock()


class DirectFile:
    """A file open for writing twice: fd, ordinary, and, where the file system allows,
    direct (O_DIRECT); close() closes both (fd only if it opened it)."""

    def __init__(
        self, path: os.PathLike[str] | str, size: int, mode: int = 0o600, fd: int | None = None
    ) -> None:
        """Open path, to be size bytes long (a file too small for a direct write gets no
        direct descriptor); fd: path's ordinary descriptor, open already (its owner closes
        it), so that only the direct one is opened, and only for a big enough file."""
        self._owns_fd = fd is None
        self.fd = os.open(path, os.O_RDWR | os.O_CREAT, mode) if fd is None else fd
        self.direct: int | None = None
        # The file is open already: whatever refuses the second open (EINVAL on tmpfs,
        # EOPNOTSUPP, ...) leaves the ordinary descriptor to write every byte.
        direct = getattr(os, "O_DIRECT", None)  # Linux's; macOS has none
        with contextlib.suppress(OSError):
            if direct is not None and size >= MIN_DIRECT:
                self.direct = os.open(path, os.O_WRONLY | direct)

    def pwrite_parts(self, parts: Sequence[Buffer], at: int) -> int:
        """Write parts one after another from offset at; return the bytes written."""
        total = sum(map(len, parts))
        if self.direct is None or at % ALIGN or total < MIN_DIRECT:
            pwrite_all(self.fd, parts, at)
            return total
        for window in _windows(parts, WINDOW):  # each but the last WINDOW bytes: aligned
            size = sum(map(len, window))
            if self.direct is None:  # refused in an earlier window
                pwrite_all(self.fd, window, at)
            else:
                self._pwrite_window(self.direct, window, size, at)
            at += size
        return total

    def _pwrite_window(self, direct: int, parts: Sequence[Buffer], size: int, at: int) -> None:
        """Write size bytes of parts from aligned offset at: their aligned part through
        direct, the descriptor open with O_DIRECT."""
        with _aligned(size) as buffer:
            gather(buffer, parts)
            done, whole = 0, size - size % ALIGN
            try:
                while done < whole:
                    done += os.pwrite(direct, buffer[done:whole], at + done)
            except OSError as exc:  # refused after all (a device with bigger blocks)
                if exc.errno != errno.EINVAL:
                    raise
                self._no_direct()
            pwrite_all(self.fd, [buffer[done:size]], at + done)

    def close(self) -> None:
        """Close both descriptors (fd only if this opened it)."""
        self._no_direct()
        if self._owns_fd:
            os.close(self.fd)

    def _no_direct(self) -> None:
        """Write the rest through the ordinary descriptor only."""
        if self.direct is not None:
            os.close(self.direct)
            self.direct = None


def _windows(parts: Sequence[Buffer], size: int) -> Iterator[list[memoryview]]:
    """Views of parts in order, in lists of size bytes each (the last may hold fewer)."""
    window: list[memoryview] = []
    room = size
    for part in parts:
        view = memoryview(part)
        while len(view) >= room:
            window.append(view[:room])
            yield window
            view, window, room = view[room:], [], size
        if len(view):
            window.append(view)
            room -= len(view)
    if window:
        yield window


@contextmanager
def _aligned(size: int) -> Iterator[memoryview]:
    """A page-aligned buffer of size bytes, a spare one if one is big enough."""
    with _spare_lock:
        fit = next((b for b in _spare if len(b) >= size), None)
        if fit is not None:
            _spare.remove(fit)
    buffer = fit or mmap.mmap(-1, -(-size // ALIGN) * ALIGN)
    view = memoryview(buffer)[:size]
    try:
        yield view
    finally:
        view.release()  # the caller's slices of it are gone: close() needs no views left
        with _spare_lock:
            _spare.append(buffer)
            if len(_spare) > SPARE_BUFFERS:
                smallest = min(_spare, key=len)
                _spare.remove(smallest)
                smallest.close()


def pwrite_all(fd: int, parts: Sequence[Buffer], at: int) -> None:
    """Write parts from offset at, straight from their buffers (pwritev may write less than
    it is given, and takes IOV_MAX buffers at most)."""
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        n = os.pwritev(fd, views[:IOV_MAX], at)
        at += n
        while views and n >= len(views[0]):
            n -= len(views.pop(0))
        if n:
            views[0] = views[0][n:]
