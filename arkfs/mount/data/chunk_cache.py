"""The disk cache: chunks, xorb footers and file maps, keyed by hash, bounded in size.

Layout under root, every file named by the XET hash string of what names it:
    packs/<first 2 hex digits>/<pack id>        decompressed chunks stored together
    footers/<first 2 hex digits>/<xorb hash>    a xorb's CasObjectInfo footer (packed)
    maps/<first 2 hex digits>/<file hash>       a file's verified map (file_map.pack_map)
    blocks/<first 2 hex digits>/<block id>      a block of a plain HTTP object (below)

Chunks are cached in packs: the chunks one fetch brought (a group: up to 8 MiB in the mount) go into
one file, a header listing each chunk's hash, size and checksum, then their bytes. One
file per chunk cost a create, a rename and a directory entry per 64 KiB, which halved a
cold read; a pack is one sequential write and one sequential read. A pack's id is the hash
of its chunk hashes. The index maps each chunk hash to its pack, offset, size and checksum.
Files are written past the page cache (O_DIRECT, arkfs.util.direct) where the file system
allows: those pages were a second copy of bytes the reader holds in memory, the kernel
keeps of the mounted file, or `arkfs get` has just written, and filling them cost a cold
read of a GiB 1.5-2.5 s of CPU (README "Reads: where the time goes").

Content is immutable, so one cache serves every archive and mount, and survives remounts.
A chunk was checked against its chunk hash before it was stored; read back, it is checked
against its checksum, the cache's own integrity (as mountpoint-s3 uses CRC32C): XXH3-64
runs at about 10 GB/s here, BLAKE3 and zlib's CRC-32 at 0.5 to 1, and every read from the
cache (a warm read, a 4 KiB random read's whole chunk) paid for BLAKE3. Footers and maps
are checked against their hashes. A pack holding a chunk that fails its check is deleted
whole, logged once and its chunks reported missing: the caller fetches them again, never
serves them.

Blocks of plain HTTP objects (arkfs.resolver.objects) are named by a block id that is
the BLAKE3 of the object's URL, ETag, digest and block index: another version of the
object has other ids. Their bytes have no hash of their own to check, so each file is
the BLAKE3 of (block id, bytes), then the bytes; a file that fails it is deleted, logged
once and reported missing, as a damaged pack is.

Which files go when the cache is full is the eviction policy's choice (eviction.py; by
default the least recently used, each file weighed by its size). The index of the files
and their chunks lives in memory; scan() fills it once from the directory, oldest mtime
first, reading each pack's header.
Blocking methods (scan, get_chunks, put_chunks, get_footer, put_footer, get_map, put_map,
get_block, put_block, drop_blocks)
are for worker threads and are thread-safe; has(), chunks_at_hand() (chunks in the page
cache, read with RWF_NOWAIT) and the sizes never block and are safe from any thread. The
most recently read files stay open (OPEN_FILES), and a file read is re-dated for the next
scan's order at most every TOUCH_EVERY seconds. Files are written whole under a temp name
and renamed, so a crash leaves a whole file or a temp file that the next scan removes.
Processes sharing a root each keep their own index: each stays within max_bytes for what it
wrote, and a file one deletes is a miss for the others (or, while still open here, read
and checked as before).
"""

import logging
import os
import struct
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import blake3
import xxhash

from arkfs.mount.data.errors import BadMapFile
from arkfs.mount.data.eviction import EvictionPolicy, LRUPolicy
from arkfs.mount.data.file_map import FileMap, pack_map, unpack_map
from arkfs.util.atomic import is_temp, remove_stale_temps, write_atomic
from arkfs.util.pagecache import read_if_cached, will_need
from arkfs.xet.compression import ChunkData
from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import HashStringError, XetError
from arkfs.xet.hashing import hash_to_string, string_to_hash
from arkfs.xet.trust import recorded_footer
from arkfs.xet.xorb import XorbFooter, footer_record

log = logging.getLogger(__name__)

PACKS, FOOTERS, MAPS, BLOCKS = "packs", "footers", "maps", "blocks"
# File keys: a tag, then the pack id, xorb hash (footer), file hash (map) or block id.
_PACK_TAG, _FOOTER_TAG, _MAP_TAG, _BLOCK_TAG = b"P", b"F", b"M", b"B"
_KINDS = ((PACKS, _PACK_TAG), (FOOTERS, _FOOTER_TAG), (MAPS, _MAP_TAG), (BLOCKS, _BLOCK_TAG))
_DIRS = {tag: kind for kind, tag in _KINDS}
PACK_MAGIC = b"ARKPACK2"
_COUNT = struct.Struct("<I")
_ENTRY = struct.Struct(f"<{HASH_SIZE}sIQ")  # chunk hash, size, checksum
_checksum = xxhash.xxh3_64_intdigest
OPEN_FILES = 256  # cache files kept open between reads
TOUCH_EVERY = 60.0  # seconds: how often a file read is re-dated for the next scan's order


class _Where(NamedTuple):
    """Where a cached chunk is: its pack's file key, offset and size, and its checksum."""

    pack: bytes
    offset: int
    size: int
    check: int


_Listed = tuple[bytes, int, int, int]  # chunk hash, offset, size, checksum


class _CutShort(OSError):
    """A cache file ends before the bytes its index says it holds."""


def _pread_all(fd: int, start: int, end: int) -> bytes:
    """Bytes [start, end) of an open file; _CutShort if it is shorter."""
    data = os.pread(fd, end - start, start)
    while len(data) < end - start:  # a short read: keep going
        more = os.pread(fd, end - start - len(data), start + len(data))
        if not more:
            raise _CutShort(f"ends at byte {start + len(data)}, before {end}")
        data += more
    return data


def _intact(data: ChunkData, where: _Where) -> bool:
    """Do a chunk's bytes, read back from its pack, match the checksum written beside them?"""
    return _checksum(data) == where.check


def _touch(fd: int) -> None:
    """Date a file just read, for the order the next scan sees (every TOUCH_EVERY s at
    most: a write of the inode per 4 KiB read cost more than the read)."""
    if time.time() - os.fstat(fd).st_mtime > TOUCH_EVERY:
        os.utime(fd)


def _pack(chunks: Sequence[tuple[bytes, ChunkData]]) -> tuple[list[ChunkData], list[_Listed]]:
    """A pack file's parts: magic, count, (hash, size, checksum) per chunk, then the chunks'
    bytes (written one after another: no copy of a whole group); and where each chunk is."""
    checks = [_checksum(data) for _, data in chunks]
    head = [PACK_MAGIC, _COUNT.pack(len(chunks))]
    head += [_ENTRY.pack(h, len(data), c) for (h, data), c in zip(chunks, checks, strict=True)]
    at = len(PACK_MAGIC) + _COUNT.size + _ENTRY.size * len(chunks)
    listed = []
    for (h, data), c in zip(chunks, checks, strict=True):
        listed.append((h, at, len(data), c))
        at += len(data)
    return [b"".join(head), *(data for _, data in chunks)], listed


def pack_bytes(chunks: Sequence[tuple[bytes, ChunkData]]) -> bytes:
    """A pack file of (hash, data) pairs (_pack)."""
    return b"".join(_pack(chunks)[0])


def _pack_header(fd: int) -> list[_Listed]:
    """(chunk hash, offset, size, checksum) of each chunk a pack file lists; ValueError if
    malformed (an older version of the format too)."""
    size = os.fstat(fd).st_size
    head = os.pread(fd, len(PACK_MAGIC) + _COUNT.size, 0)
    if len(head) != len(PACK_MAGIC) + _COUNT.size or not head.startswith(PACK_MAGIC):
        raise ValueError("not a pack file")
    (n,) = _COUNT.unpack_from(head, len(PACK_MAGIC))
    if len(head) + n * _ENTRY.size > size:
        raise ValueError(f"pack header lists {n} chunks, more than the file holds")
    table = os.pread(fd, n * _ENTRY.size, len(head))
    if len(table) != n * _ENTRY.size:
        raise ValueError("truncated pack header")
    at = len(head) + len(table)
    out = []
    for h, length, check in _ENTRY.iter_unpack(table):
        out.append((h, at, length, check))
        at += length
    if at != size:
        raise ValueError(f"pack header lists {at} bytes, the file has {size}")
    return out


def _path(root: Path, key: bytes) -> Path:
    """The file of a file key under root."""
    name = hash_to_string(key[1:])
    return root / _DIRS[key[:1]] / name[:2] / name


def _listed(path: Path) -> list[_Listed]:
    """The chunks a pack file's header lists."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _pack_header(fd)
    finally:
        os.close(fd)


_Found = tuple[float, bytes, int, list[_Listed]]  # mtime, key, size, chunks


def _walk(root: Path) -> list[_Found]:
    """(mtime, file key, size, chunks listed) of every cache file under root, oldest first;
    stale temp files and unusable files are removed on the way."""
    found: list[_Found] = []
    for kind, tag in _KINDS:
        top = root / kind
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
                        listed = _listed(Path(e.path)) if tag == _PACK_TAG else []
                    except (HashStringError, FileNotFoundError):
                        continue
                    except (OSError, ValueError) as exc:
                        log.warning("cache file %s is unusable (%s); deleted", e.path, exc)
                        Path(e.path).unlink(missing_ok=True)
                        continue
                    found.append((st.st_mtime, key, st.st_size, listed))
    found.sort(key=lambda f: f[0])
    return found


def _delete(root: Path, keys: list[bytes]) -> None:
    """Delete the files of keys the policy evicted."""
    for key in keys:
        _path(root, key).unlink(missing_ok=True)


class _OpenFile:
    """An open cache file and how many reads use it."""

    __slots__ = ("dropped", "fd", "users")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.users = 1
        self.dropped = False


class _OpenFiles:
    """Cache files kept open between reads, the most recently used up to a bound: a 4 KiB
    random read cost an open, a close and a path for each chunk. Thread-safe. A file in
    use is closed when its last read ends: its number, reused too soon, would read another
    file."""

    def __init__(self, bound: int) -> None:
        self._bound = bound
        self._open: OrderedDict[bytes, _OpenFile] = OrderedDict()
        self._lock = threading.Lock()

    def use(self, key: bytes) -> _OpenFile | None:
        """The open file of key, marked in use (release() it), or None if not open."""
        with self._lock:
            f = self._open.get(key)
            if f is not None:
                self._open.move_to_end(key)
                f.users += 1
            return f

    def add(self, key: bytes, fd: int) -> _OpenFile:
        """Keep fd open as key's file, in use (release() it); close what that pushes out."""
        with self._lock:
            f = self._open.get(key)
            if f is not None:  # another thread opened it meanwhile
                os.close(fd)
                f.users += 1
                return f
            f = self._open[key] = _OpenFile(fd)
            while len(self._open) > self._bound:
                self._let_go(self._open.popitem(last=False)[1])
            return f

    def release(self, f: _OpenFile) -> None:
        """A read of f is done."""
        with self._lock:
            f.users -= 1
            if f.dropped and not f.users:
                os.close(f.fd)

    def drop(self, keys: Iterable[bytes]) -> None:
        """Close the files of keys (deleted, or failing their check), once not in use."""
        with self._lock:
            for key in keys:
                f = self._open.pop(key, None)
                if f is not None:
                    self._let_go(f)

    def _let_go(self, f: _OpenFile) -> None:
        """Close f now or, if in use, when its last read ends (lock held)."""
        f.dropped = True
        if not f.users:
            os.close(f.fd)


class _Index:
    """What the cache holds, in memory: its files, in the order of the eviction policy, and
    where each chunk is. Thread-safe."""

    def __init__(self, policy: EvictionPolicy) -> None:
        self.files = policy
        # file key -> the chunk hashes a pack indexes (none for a footer or map)
        self._packs: dict[bytes, list[bytes]] = {}
        self._chunks: dict[bytes, _Where] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._chunks)

    def has(self, h: bytes) -> bool:
        return h in self._chunks

    def locate(self, hashes: Iterable[bytes]) -> dict[bytes, list[tuple[bytes, _Where]]]:
        """The indexed chunks of hashes, by pack."""
        by_pack: dict[bytes, list[tuple[bytes, _Where]]] = {}
        with self._lock:
            for h in hashes:
                where = self._chunks.get(h)
                if where is not None:
                    by_pack.setdefault(where.pack, []).append((h, where))
        return by_pack

    def add(self, key: bytes, size: int, listed: list[_Listed]) -> list[bytes]:
        """Index a file as most recently used; the keys evicted for it, to delete."""
        with self._lock:
            return self._add(key, size, listed)

    def restore(self, found: list[_Found]) -> list[bytes]:
        """Index the files a scan found, oldest first, before those indexed meanwhile
        (newer); the keys evicted, to delete."""
        victims: list[bytes] = []
        with self._lock:
            put_since = set(self.files)
            newer = [(k, self.files.size(k), self._pack_entries(k)) for k in self.files]
            self.files.clear()
            self._packs.clear()
            self._chunks.clear()
            for _mtime, key, size, listed in found:
                if key not in put_since:
                    victims += self._add(key, size, listed)
            for key, size, listed in newer:
                victims += self._add(key, size, listed)
        return victims

    def forget(self, key: bytes) -> None:
        """Unindex a file and the chunks of its pack."""
        with self._lock:
            self._drop(key)

    def touch(self, key: bytes) -> None:
        """Make a file the most recently used, if indexed."""
        with self._lock:
            self.files.hit(key)

    def _pack_entries(self, key: bytes) -> list[_Listed]:
        """(hash, offset, size, checksum) of the chunks of an indexed pack (lock held)."""
        return [(h, *self._chunks[h][1:]) for h in self._packs.get(key, [])]

    def _add(self, key: bytes, size: int, listed: list[_Listed]) -> list[bytes]:
        """Index key as just used, with the chunks of a pack; unindex the files the policy
        evicts for it and return their keys (lock held)."""
        self._drop(key)
        hashes = []
        for h, offset, length, check in listed:
            if h not in self._chunks:
                self._chunks[h] = _Where(key, offset, length, check)
                hashes.append(h)
        self._packs[key] = hashes
        evicted = self.files.admit(key, size)
        for old in evicted:
            self._unindex_chunks(old, self._packs.pop(old, []))
        return evicted

    def _drop(self, key: bytes) -> None:
        """Unindex key and the chunks of its pack (lock held)."""
        self.files.remove(key)
        self._unindex_chunks(key, self._packs.pop(key, []))

    def _unindex_chunks(self, key: bytes, hashes: list[bytes]) -> None:
        """Unindex the chunks of hashes that the pack key holds (lock held)."""
        for h in hashes:
            if self._chunks.get(h, _Where(b"", 0, 0, 0)).pack == key:
                del self._chunks[h]


class ChunkCache:
    """Decompressed chunks on disk, keyed by chunk hash, shared across archives and mounts."""

    def __init__(
        self,
        root: Path,
        max_bytes: int,
        policy: Callable[[int], EvictionPolicy] = LRUPolicy,
    ) -> None:
        """A cache under root of at most max_bytes; what goes when it is full is the choice
        of policy(max_bytes) (by default the least recently used: arkfs.mount.data.eviction)."""
        self.root = Path(root)
        self._index = _Index(policy(max_bytes))
        self._files = _OpenFiles(OPEN_FILES)
        self._lock = threading.Lock()  # guards bad_files
        self._scan_lock = threading.Lock()  # a second scan() waits for the first to finish
        self._scanned = False
        self.bad_files = 0  # files that failed their check and were deleted

    @property
    def max_bytes(self) -> int:
        """The bound on used_bytes."""
        return self._index.files.capacity

    @property
    def used_bytes(self) -> int:
        """Bytes of the files in the index."""
        return self._index.files.total

    def __len__(self) -> int:
        """How many chunks the cache holds."""
        return len(self._index)

    def has(self, h: bytes) -> bool:
        """Is a chunk with hash h in the index? (It may still fail its check when read.)"""
        return self._index.has(h)

    def scan(self) -> None:
        """Fill the index from the directory, once; remove stale temp files; trim to size."""
        with self._scan_lock:
            if not self._scanned:
                self._delete(self._index.restore(_walk(self.root)))
                self._scanned = True

    def _open(self, key: bytes) -> _OpenFile | None:
        """The file of key, open and in use (release it); None, and unindexed, if it cannot
        be opened."""
        f = self._files.use(key)
        if f is not None:
            return f
        path = _path(self.root, key)
        try:
            return self._files.add(key, os.open(path, os.O_RDONLY))
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("cannot open cache file %s (%s); will fetch it again", path, exc)
        self._forget(key)
        return None

    def _read_spans(
        self, spans: Mapping[bytes, tuple[int, int] | None]
    ) -> dict[bytes, bytes | None]:
        """Bytes [start, end) of each file (None: all of it; None when unreadable).

        Several files are all opened and announced to the kernel (POSIX_FADV_WILLNEED)
        before the first is read, so a cold batch is read with a deep queue.
        """
        opened: dict[bytes, _OpenFile] = {}
        out: dict[bytes, bytes | None] = dict.fromkeys(spans)
        try:
            for key, span in spans.items():
                f = self._open(key)
                if f is None:
                    continue
                opened[key] = f
                if len(spans) > 1:
                    start, end = span or (0, 0)
                    will_need(f.fd, start, end - start)
            for key, f in opened.items():
                try:
                    start, end = spans[key] or (0, os.fstat(f.fd).st_size)
                    out[key] = _pread_all(f.fd, start, end)
                    _touch(f.fd)
                except _CutShort as exc:
                    self._reject(key, str(exc))
                except OSError as exc:
                    log.warning("cannot read cache file %s (%s)", _path(self.root, key), exc)
                    self._forget(key)
        finally:
            for f in opened.values():
                self._files.release(f)
        return out

    def _read_file(self, key: bytes) -> bytes | None:
        """The bytes of an indexed file; None if it is not indexed or cannot be read."""
        if key not in self._index.files:
            return None
        return self._read_spans({key: None})[key]

    def _reject(self, key: bytes, why: str) -> None:
        path = _path(self.root, key)
        with self._lock:
            self.bad_files += 1
        log.warning("cache file %s %s; deleted, will fetch it again", path, why)
        self._forget(key)
        path.unlink(missing_ok=True)

    def _forget(self, key: bytes) -> None:
        """Unindex a file and close it."""
        self._index.forget(key)
        self._files.drop([key])

    def _delete(self, keys: list[bytes]) -> None:
        """Close and delete the files of keys the policy evicted."""
        self._files.drop(keys)
        _delete(self.root, keys)

    def _write(
        self, key: bytes, data: bytes | Sequence[ChunkData], listed: Iterable[_Listed] = ()
    ) -> None:
        """Write a file whole (data, or its parts) and index it; delete what that evicts.
        A file bigger than the whole cache is not written (with max_bytes 0, nothing is)."""
        size = len(data) if isinstance(data, bytes) else sum(map(len, data))
        if size > self.max_bytes:
            return
        path = _path(self.root, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, data, durable=False, direct=True)
        self._delete(self._index.add(key, size, list(listed)))

    def get_chunks(self, hashes: Iterable[bytes]) -> dict[bytes, ChunkData]:
        """The chunks of hashes that are in the cache and pass their check; the others
        are missing. Blocking: reads each pack's span of them once, and checks every chunk.
        Each chunk is a view of its span, not a copy: slicing them out was a tenth of
        the GIL a warm read holds (py-spy)."""
        by_pack = self._index.locate(hashes)
        spans = {
            pack: (min(w.offset for _, w in items), max(w.offset + w.size for _, w in items))
            for pack, items in by_pack.items()
        }
        found: dict[bytes, ChunkData] = {}
        for pack, data in self._read_spans(spans).items():
            if data is None:
                continue
            base, view = spans[pack][0], memoryview(data)
            chunks = {h: view[w.offset - base : w.offset - base + w.size] for h, w in by_pack[pack]}
            bad = next((h for h, w in by_pack[pack] if not _intact(chunks[h], w)), None)
            if bad is not None:
                self._reject(pack, f"holds chunk {hash_to_string(bad)} damaged")
                continue
            self._index.touch(pack)
            found |= chunks
        return found

    def chunks_at_hand(self, hashes: Sequence[bytes]) -> dict[bytes, bytes] | None:
        """The chunks of hashes if every one is indexed, in a file already open and in the
        page cache, and passes its check; else None, and get_chunks() reads them (and
        rejects a damaged pack). Never blocks: for the trio thread, which saves a 4 KiB
        read two thread hops."""
        by_pack = self._index.locate(hashes)
        if sum(map(len, by_pack.values())) != len(hashes):
            return None
        found: dict[bytes, bytes] = {}
        for pack, items in by_pack.items():
            f = self._files.use(pack)
            if f is None:
                return None
            try:
                for h, w in items:
                    data = read_if_cached(f.fd, w.offset, w.size)
                    if data is None or not _intact(data, w):
                        return None
                    found[h] = data
            finally:
                self._files.release(f)
            self._index.touch(pack)
        return found

    def put_chunks(self, chunks: Iterable[tuple[bytes, ChunkData]]) -> None:
        """Store (hash, verified data) pairs not yet stored, as one pack, evicting down
        to max_bytes."""
        new = dict((h, data) for h, data in chunks if not self._index.has(h))
        if not new or sum(map(len, new.values())) > self.max_bytes:
            return  # too big for the cache (_write) before it is even packed
        parts, listed = _pack(list(new.items()))
        key = _PACK_TAG + blake3.blake3(b"".join(new)).digest()
        self._write(key, parts, listed)

    def get_footer(self, xorb_hash: bytes) -> XorbFooter | None:
        """A stored footer of xorb_hash, checked against the xorb hash; None if absent or bad."""
        key = _FOOTER_TAG + xorb_hash
        data = self._read_file(key)
        if data is None:
            return None
        try:
            footer = recorded_footer(data, xorb_hash)
        except XetError as exc:
            self._reject(key, f"is not a valid footer ({exc})")
            return None
        self._index.touch(key)
        return footer

    def put_footer(self, footer: XorbFooter) -> None:
        """Store a verified footer under its xorb hash."""
        key = _FOOTER_TAG + footer.xorb_hash
        if key not in self._index.files:
            self._write(key, footer_record(footer))

    def get_map(self, file_hash: bytes) -> FileMap | None:
        """The stored map of file_hash, checked again (unpack_map); None if absent or bad."""
        key = _MAP_TAG + file_hash
        data = self._read_file(key)
        if data is None:
            return None
        try:
            fmap = unpack_map(data, file_hash)
        except BadMapFile as exc:
            self._reject(key, f"is not a valid file map ({exc})")
            return None
        self._index.touch(key)
        return fmap

    def has_map(self, file_hash: bytes) -> bool:
        """Is a map of file_hash in the index? (It may still fail its check when read.)"""
        return _MAP_TAG + file_hash in self._index.files

    def put_map(self, fmap: FileMap) -> None:
        """Store a verified map under its file hash."""
        key = _MAP_TAG + fmap.file_hash
        if key not in self._index.files:
            self._write(key, pack_map(fmap))

    def has_block(self, block_id: bytes) -> bool:
        """Is a block in the index? (It may still fail its check when read.)"""
        return _BLOCK_TAG + block_id in self._index.files

    def get_block(self, block_id: bytes) -> bytes | None:
        """A stored block, checked against its stored digest; None if absent or damaged."""
        key = _BLOCK_TAG + block_id
        data = self._read_file(key)
        if data is None:
            return None
        body = memoryview(data)[HASH_SIZE:]
        if blake3.blake3(block_id).update(body).digest() != data[:HASH_SIZE]:
            self._reject(key, "does not match its digest (damaged)")
            return None
        self._index.touch(key)
        return bytes(body)

    def put_block(self, block_id: bytes, data: bytes) -> None:
        """Store a block under its id, behind the BLAKE3 of (id, data)."""
        key = _BLOCK_TAG + block_id
        if key not in self._index.files:
            digest = blake3.blake3(block_id).update(data).digest()
            self._write(key, digest + data)

    def drop_blocks(self, block_ids: Iterable[bytes]) -> None:
        """Delete stored blocks (of an object whose bytes failed their digest)."""
        keys = [_BLOCK_TAG + b for b in block_ids]
        for key in keys:
            self._index.forget(key)
        self._delete(keys)
