"""Memory set up for the data path: glibc's allocator (two arenas, not eight per core)
and Python's collector (tune_gc).

A cold read allocates and frees chunks and buffers of up to 8 MiB from many threads
(fetches, decoding, cache writes). glibc gives threads up to 8 arenas per core, and the
space freed in each stays resident, so the mount's RSS grows beyond what it holds. Two
arenas share that space. (Fixing the mmap threshold instead cut RSS as much, but each
8 MiB buffer then costs its page faults anew: cold reads were slower.)

A process that only downloads (`arkfs get`) keeps what it frees instead (keep_freed): its
16 MiB fetch buffers and decoded groups come back from the arenas, with no fresh pages to
fault in and zero. A publish, which frees much between its phases (the xorbs' chunks once
hashing ends), gives the free pages back before the next phase allocates (release_freed).
"""

import ctypes
import gc
import logging

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD, M_ARENA_MAX = -1, -3, -8  # mallopt parameters (malloc.h)
ARENAS = 2
KEEP_BELOW = 64 * 1024 * 1024  # keep_freed: blocks smaller than this come from the arenas
KEEP_FREE = 512 * 1024 * 1024  # keep_freed: free space an arena keeps rather than return


def limit_arenas() -> None:
    """Limit glibc to ARENAS arenas; nothing on another C library."""
    _set({M_ARENA_MAX: ARENAS})


def keep_freed() -> None:
    """Serve blocks below KEEP_BELOW from the arenas and let each keep up to KEEP_FREE of
    freed space (for a process whose life is one download; see the module docstring)."""
    _set({M_MMAP_THRESHOLD: KEEP_BELOW, M_TRIM_THRESHOLD: KEEP_FREE})


def release_freed() -> None:
    """Return the arenas' free pages to the system (malloc_trim); nothing on another C
    library."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


def _set(params: dict[int, int]) -> None:
    """mallopt each parameter; nothing on another C library."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    for param, value in params.items():
        if not mallopt(param, value):
            log.debug("mallopt(%d) refused; the allocator keeps its default", param)


def tune_gc() -> None:
    """Freeze what setup made (it lives as long as the process) and collect the youngest
    generation every 10,000 new objects, not 700: a find of 100,000 entries in the mount
    makes a node per entry, and the default spent ~85 ms of the trio thread in 150
    collections (12 ms); a 1 GiB `arkfs get` made 150 collections, 0.35-0.6 s with the
    GIL held."""
    gc.freeze()
    gc.set_threshold(10_000, 10, 10)
