"""The disk cache: chunks, xorb footers and file maps, keyed by hash, bounded by an LRU.

Layout under root, every file named by the XET hash string of what it holds:
    chunks/<first 2 hex digits>/<chunk hash>    a chunk's decompressed bytes
    footers/<first 2 hex digits>/<xorb hash>    a xorb's CasObjectInfo footer (packed)
    maps/<first 2 hex digits>/<file hash>       a file's verified map (file_map.pack_map)

Content is immutable and every file is checked against its hash when read, so one cache
serves every archive and mount, and survives remounts. A file that fails its check is
deleted, logged once and reported missing: the caller fetches it again, never serves it.

The index (key -> size, in LRU order) lives in memory; scan() fills it once from the
directory, oldest mtime first. Blocking methods (scan, get_chunks, put_chunks, get_footer,
put_footer, get_map, put_map) are for worker threads and are thread-safe; has() and the
sizes are cheap and safe from any thread. Writes are atomic (temp file and rename), so a
crash leaves a whole file or a temp file that the next scan removes. Processes sharing a
root each keep their own index: each stays within max_bytes for what it wrote, and a file
one deletes is a miss for the others, fetched again.
"""

import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path

from arkfs.mount.file_map import BadMapFile, FileMap, pack_map, unpack_map
from arkfs.store.atomic import is_temp, remove_stale_temps, write_atomic
from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import HashStringError, XetError
from arkfs.xet.hashing import chunk_hash, hash_to_string, string_to_hash
from arkfs.xet.xorb import XorbFooter, parse_footer

log = logging.getLogger(__name__)

CHUNKS, FOOTERS, MAPS = "chunks", "footers", "maps"
# Index keys: a chunk's hash as is; a footer's xorb hash or a map's file hash behind a tag.
_FOOTER_TAG, _MAP_TAG = b"F", b"M"
_KINDS = ((CHUNKS, b""), (FOOTERS, _FOOTER_TAG), (MAPS, _MAP_TAG))


def _key_dir(key: bytes) -> tuple[str, bytes]:
    if len(key) == HASH_SIZE:
        return CHUNKS, key
    return (FOOTERS if key[:1] == _FOOTER_TAG else MAPS), key[1:]


class ChunkCache:
    """Decompressed chunks on disk, keyed by chunk hash, shared across archives and mounts."""

    def __init__(self, root: Path, max_bytes: int) -> None:
        self.root = Path(root)
        self.max_bytes = max_bytes
        self._index: OrderedDict[bytes, int] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._scan_lock = threading.Lock()  # a second scan() waits for the first to finish
        self._scanned = False
        self.bad_files = 0  # files that failed their check and were deleted

    @property
    def used_bytes(self) -> int:
        """Bytes of the files in the index."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._index)

    def has(self, h: bytes) -> bool:
        """Is a chunk with hash h in the index? (It may still fail its check when read.)"""
        return h in self._index

    def _path(self, key: bytes) -> Path:
        kind, h = _key_dir(key)
        name = hash_to_string(h)
        return self.root / kind / name[:2] / name

    def scan(self) -> None:
        """Fill the index from the directory, once; remove stale temp files; trim to size."""
        with self._scan_lock:
            if not self._scanned:
                self._scan()
                self._scanned = True

    def _scan(self) -> None:
        found: list[tuple[float, bytes, int]] = []
        for kind, tag in _KINDS:
            top = self.root / kind
            top.mkdir(parents=True, exist_ok=True)
            for sub in top.iterdir():
                if not sub.is_dir():
                    continue
                remove_stale_temps(sub)
                with os.scandir(sub) as entries:
                    for e in entries:
                        if is_temp(e.name):
                            continue
                        try:
                            key = tag + string_to_hash(e.name)
                            st = e.stat()
                        except (HashStringError, FileNotFoundError):
                            continue
                        found.append((st.st_mtime, key, st.st_size))
        found.sort()
        with self._lock:
            # Entries put before or during the scan are newer: keep them last.
            newer = list(self._index.items())
            self._index.clear()
            self._bytes = 0
            for _mtime, key, size in found:
                self._add(key, size)
            for key, size in newer:
                self._add(key, size)
        self._evict()

    def _add(self, key: bytes, size: int) -> None:
        """Index key as most recently used (lock held)."""
        self._bytes += size - self._index.pop(key, 0)
        self._index[key] = size

    def _forget(self, key: bytes) -> None:
        with self._lock:
            self._bytes -= self._index.pop(key, 0)

    def _touch(self, key: bytes) -> None:
        with self._lock:
            if key in self._index:
                self._index.move_to_end(key)

    def _evict(self) -> None:
        """Delete least recently used files until the index is within max_bytes."""
        victims = []
        with self._lock:
            while self._bytes > self.max_bytes and self._index:
                key, size = self._index.popitem(last=False)
                self._bytes -= size
                victims.append(key)
        for key in victims:
            self._path(key).unlink(missing_ok=True)

    def _read(self, key: bytes) -> bytes | None:
        path = self._path(key)
        try:
            data = path.read_bytes()
            os.utime(path)  # the LRU order the next scan sees
        except FileNotFoundError:
            self._forget(key)
            return None
        except OSError as exc:
            log.warning("cannot read cache file %s (%s); will fetch it again", path, exc)
            self._forget(key)
            return None
        return data

    def _reject(self, key: bytes, why: str) -> None:
        path = self._path(key)
        with self._lock:
            self.bad_files += 1
        log.warning("cache file %s %s; deleted, will fetch it again", path, why)
        self._forget(key)
        path.unlink(missing_ok=True)

    def _write(self, key: bytes, data: bytes | memoryview) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, durable=False)
        with self._lock:
            self._add(key, len(data))

    def get_chunks(self, hashes: Iterable[bytes]) -> dict[bytes, bytes]:
        """The chunks of hashes that are in the cache and pass their check; the others
        are missing. Blocking: reads and hashes every chunk."""
        found: dict[bytes, bytes] = {}
        for h in hashes:
            if h not in self._index:
                continue
            data = self._read(h)
            if data is None:
                continue
            if chunk_hash(data) != h:
                self._reject(h, "does not match its chunk hash")
                continue
            self._touch(h)
            found[h] = data
        return found

    def put_chunks(self, chunks: Iterable[tuple[bytes, bytes]]) -> None:
        """Store (hash, verified data) pairs not yet stored, then evict down to max_bytes."""
        for h, data in chunks:
            if h not in self._index and len(data) <= self.max_bytes:
                self._write(h, data)
        self._evict()

    def get_footer(self, xorb_hash: bytes) -> XorbFooter | None:
        """A stored footer of xorb_hash, checked against the xorb hash; None if absent or bad."""
        key = _FOOTER_TAG + xorb_hash
        if key not in self._index:
            return None
        data = self._read(key)
        if data is None:
            return None
        try:
            # Stored as the chunk region's length (u64) and the footer: parse_footer
            # checks the footer's offsets against the size of the xorb it ends.
            region = int.from_bytes(data[:8], "little")
            footer = parse_footer(memoryview(data)[8:], region + len(data) - 8)
            footer.verify()
            if footer.xorb_hash != xorb_hash:
                raise XetError(f"holds the footer of {hash_to_string(footer.xorb_hash)}")
        except XetError as exc:
            self._reject(key, f"is not a valid footer ({exc})")
            return None
        self._touch(key)
        return footer

    def put_footer(self, footer: XorbFooter) -> None:
        """Store a verified footer under its xorb hash."""
        key = _FOOTER_TAG + footer.xorb_hash
        if key not in self._index:
            self._write(key, footer.packed_ends[-1].to_bytes(8, "little") + footer.pack())
            self._evict()

    def get_map(self, file_hash: bytes) -> FileMap | None:
        """The stored map of file_hash, checked again (unpack_map); None if absent or bad."""
        key = _MAP_TAG + file_hash
        if key not in self._index:
            return None
        data = self._read(key)
        if data is None:
            return None
        try:
            fmap = unpack_map(data, file_hash)
        except BadMapFile as exc:
            self._reject(key, f"is not a valid file map ({exc})")
            return None
        self._touch(key)
        return fmap

    def put_map(self, fmap: FileMap) -> None:
        """Store a verified map under its file hash."""
        key = _MAP_TAG + fmap.file_hash
        if key not in self._index:
            self._write(key, pack_map(fmap))
            self._evict()
