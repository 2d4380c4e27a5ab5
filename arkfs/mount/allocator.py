"""glibc's allocator set up for the data path: two arenas, not eight per core.

A cold read allocates and frees chunks and buffers of up to 8 MiB from many threads
(fetches, decoding, cache writes). glibc gives threads up to 8 arenas per core, and the
space freed in each stays resident, so the mount's RSS grows beyond what it holds. Two
arenas share that space. (Fixing the mmap threshold instead cut RSS as much, but each
8 MiB buffer then costs its page faults anew: cold reads were slower.)
"""

import ctypes
import logging

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt parameter (malloc.h)
ARENAS = 2


def limit_arenas() -> None:
    """Limit glibc to ARENAS arenas; nothing on another C library."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    if not mallopt(M_ARENA_MAX, ARENAS):
        log.debug("mallopt(M_ARENA_MAX) refused; the allocator keeps its defaults")
