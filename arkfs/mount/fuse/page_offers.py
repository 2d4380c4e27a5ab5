"""Handing verified bytes to the kernel's page cache after a small read (FUSE_NOTIFY_STORE)."""

import logging
import queue
import threading

import pyfuse3

from arkfs.mount.data.reader import ContentReader

log = logging.getLogger(__name__)

MAX_STORES = 8  # page stores waiting; more reads just skip the offer
PAGE = 4096


def _page_up(n: int) -> int:
    return -(-n // PAGE) * PAGE


def _page_down(n: int) -> int:
    return n // PAGE * PAGE


_Store = tuple[int, int, bytes, list[tuple[int, int]]]  # inode, start of data, data, pieces


class PageOffers:
    """Offers the kernel the rest of the chunks a small read loaded."""

    def __init__(self, reader: ContentReader) -> None:
        self._reader = reader
        self._store_pages = True  # until the kernel refuses FUSE_NOTIFY_STORE
        self._stores: queue.SimpleQueue[_Store | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def offer(self, ino: int, file_hash: bytes, size: int, off: int, end: int) -> None:
        """After a small read, hand the kernel the rest of the chunks it needed.

        A 4 KiB random read costs the whole chunk (about 64 KiB) to load and verify; the
        kernel's readahead does not ask for the rest, so later reads in the same chunk
        would load it again. FUSE_NOTIFY_STORE puts those verified bytes in the page cache.
        It waits for page locks, and the kernel holds those of the read being answered, so
        it runs in a thread of its own, never for the read's own pages. One long-lived
        thread fed by a queue: a trio worker-thread call per store cost more CPU than the
        read it followed.
        """
        if self._stores.qsize() >= MAX_STORES or not self._store_pages:
            return
        around = self._reader.around(file_hash, size, off, end, PAGE)
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
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="page stores")
                self._thread.start()
            self._stores.put((ino, start, data, pieces))

    def close(self) -> None:
        """Finish the stores queued (before the FUSE session is closed)."""
        if self._thread is not None:
            self._stores.put(None)
            self._thread.join()
            self._thread = None

    def _serve(self) -> None:
        """Hand the queued stores to the kernel until close()."""
        while (store := self._stores.get()) is not None:
            self._hand(*store)

    def _hand(self, ino: int, start: int, data: bytes, pieces: list[tuple[int, int]]) -> None:
        """Put pieces [a, b) of the file, from data starting at start, in the kernel's page
        cache (FUSE_NOTIFY_STORE)."""
        try:
            for a, b in pieces:
                pyfuse3.notify_store(ino, a, data[a - start : b - start])
        except OSError as exc:  # e.g. ENOSYS: this kernel cannot take stores
            if self._store_pages:
                log.warning("cannot hand pages to the kernel (%s); not trying again", exc)
            self._store_pages = False
        except Exception:
            log.exception("handing pages to the kernel failed")
