"""How the data path asks a backend: calls under a backstop time limit whose errors become
ReadError, and the fetch URLs reconstructions hand out.

Fetch URLs come from reconstructions and are kept in memory only, at most URLS of them,
per (backend, xorb): they expire, and a refused one (Expired) calls for a new
reconstruction.
"""

from collections.abc import Awaitable, Callable
from typing import TypeVar

import trio

from arkfs.backend.base import BackendError, BadReply, CasReader, Unauthorized
from arkfs.mount.data.errors import BadBytes, Expired, ReadError
from arkfs.util.lru import LRU
from arkfs.xet.reconstruction import Reconstruction

# A backstop for a backend call that never returns. Each request ends within its own
# deadline (10 s, arkfs.net.retry); 14 s lets that clearer error come first, yet keeps
# a read(2) and the kernel's one retry of a failed readahead within 30 s even if the
# backend does not fail fast.
BACKEND_TIMEOUT = 14.0
URLS = 1 << 16  # fetch URLs remembered, per (backend, xorb)

T = TypeVar("T")


async def call_backend(what: str, fn: Callable[..., Awaitable[T]], *args: object) -> T:
    """fn(*args) with a time limit; its errors become ReadError (Expired if the backend
    refused a URL or token, BadBytes if its reply was bad), what saying what was read."""
    try:
        with trio.fail_after(BACKEND_TIMEOUT):
            return await fn(*args)
    except Unauthorized as exc:
        raise Expired(f"{what}: {exc}") from None
    except BadReply as exc:
        raise BadBytes(f"{what}: {exc}") from None
    except BackendError as exc:
        raise ReadError(f"{what}: {exc}") from None
    except trio.TooSlowError:
        raise ReadError(f"{what}: no answer from the backend in {BACKEND_TIMEOUT:.0f} s") from None


class FetchUrls:
    """The latest fetch URL of each (backend, xorb), from the reconstructions seen."""

    def __init__(self, capacity: int = URLS) -> None:
        self._urls: LRU[tuple[str, bytes], str] = LRU(capacity)

    def get(self, backend: CasReader, xorb_hash: bytes) -> str | None:
        """The URL to fetch from xorb_hash through backend; None if none was seen."""
        return self._urls.peek((backend.name, xorb_hash))

    def keep(self, backend: CasReader, rec: Reconstruction) -> None:
        """Remember the URLs of a reconstruction, replacing older ones."""
        for xh, frs in rec.fetch.items():
            if frs:
                self._urls.put((backend.name, xh), frs[0].url)
