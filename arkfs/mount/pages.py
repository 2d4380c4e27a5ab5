"""Handing verified bytes to the kernel's page cache after a small read (FUSE_NOTIFY_STORE)."""

import logging

import pyfuse3
import trio

from arkfs.mount.reader import ContentReader

log = logging.getLogger(__name__)

MAX_STORES = 8  # page stores running at once; more reads just skip the offer
PAGE = 4096


def _page_up(n: int) -> int:
    return -(-n // PAGE) * PAGE


def _page_down(n: int) -> int:
    return n // PAGE * PAGE


class PageOffers:
    """Offers the kernel the rest of the chunks a small read loaded."""

    def __init__(self, reader: ContentReader) -> None:
        self._reader = reader
        self._store_pages = True  # until the kernel refuses FUSE_NOTIFY_STORE
        self._stores_running = 0

    def offer(self, ino: int, file_hash: bytes, size: int, off: int, end: int) -> None:
        """After a small read, hand the kernel the rest of the chunks it needed.

        A 4 KiB random read costs the whole chunk (about 64 KiB) to load and verify; the
        kernel's readahead does not ask for the rest, so later reads in the same chunk
        would load it again. FUSE_NOTIFY_STORE puts those verified bytes in the page cache.
        It waits for page locks, and the kernel holds those of the read being answered, so
        it runs detached in a worker thread, never for the read's own pages.
        """
        if self._stores_running >= MAX_STORES or not self._store_pages:
            return
        around = self._reader.around(file_hash, size, off, end)
        if around is None:
            return
        start, data = around
        stop = start + len(data)
        pieces = [
            (_page_up(start), _page_down(off)),
            (_page_up(end), stop if stop == size else _page_down(stop)),
        ]
        pieces = [(a, b) for a, b in pieces if a < b]
        if pieces:
            self._stores_running += 1
            trio.lowlevel.spawn_system_task(self._hand, ino, start, data, pieces)

    async def _hand(self, ino: int, start: int, data: bytes, pieces: list[tuple[int, int]]) -> None:
        """Put pieces [a, b) of the file, from data starting at start, in the kernel's page
        cache (FUSE_NOTIFY_STORE), one worker-thread call each."""
        try:
            for a, b in pieces:
                await trio.to_thread.run_sync(
                    pyfuse3.notify_store, ino, a, data[a - start : b - start]
                )
        except OSError as exc:  # e.g. ENOSYS: this kernel cannot take stores
            if self._store_pages:
                log.warning("cannot hand pages to the kernel (%s); not trying again", exc)
            self._store_pages = False
        except Exception:
            log.exception("handing pages to the kernel failed")
        finally:
            self._stores_running -= 1
