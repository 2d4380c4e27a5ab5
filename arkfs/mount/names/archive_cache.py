"""The mount's archive cache: archive versions (manifest, ERC, version record) on disk,
checked before use.

One file per ARK in archives/ for its latest version seen (for offline remounts), and one
per version read in archive-versions/, named by `ARK/@vN` (it never changes): the BLAKE3
digest of a msgpack body, then the body, as file maps are stored (file_map.pack_map). The
manifest names the hashes every read trusts, so a damaged copy counts as absent: it is
never served, and the next answer from a backend replaces it.

An ARK that resolves to a plain HTTP object has, in objects/, the last record seen of it
(URL, size, ETag, digest, ?info; arkfs.resolver.objects), framed the same way: offline,
it names the object's blocks in the disk cache.
"""

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import blake3
import msgpack

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError
from arkfs.ark.version_qualifier import version_name
from arkfs.resolver.objects import RemoteObject
from arkfs.util.atomic import is_temp, write_atomic
from arkfs.util.urls import without_secrets
from arkfs.xet.constants import HASH_SIZE

log = logging.getLogger(__name__)

CACHE_FORMAT = "arkfs-archive-cache"
# 2: a BLAKE3 digest of the msgpack body comes first; 3: version records; 4: the manifest
# follows the record instead of inside it, so neither is copied into the other
CACHE_VERSION = 4
ARCHIVES_DIR = "archives"  # the latest version seen of each ARK
VERSIONS_DIR = "archive-versions"  # each version read, by ARK/@vN
OBJECTS_DIR = "objects"  # the last record seen of each ARK that is a plain HTTP object
RECORD_SIZE = 4  # bytes of the record's size, before the record
T = TypeVar("T")


class DamagedCacheFile(Exception):
    """A cached archive that fails its digest or does not parse."""


class ArchiveCache:
    """Archive versions on disk: the latest seen of each ARK, and each version read; the
    BLAKE3 digest of a msgpack body, then the body, as file maps are stored
    (file_map.pack_map). The manifest names the hashes every read trusts, so a cached copy
    is checked before use.

    Blocking methods: call them from worker threads.
    """

    def __init__(self, root: Path) -> None:
        self.root = root / ARCHIVES_DIR
        self.versions = root / VERSIONS_DIR
        self.objects = root / OBJECTS_DIR

    def _path(self, key: str, version: int | None) -> Path:
        if version is None:
            return self.root / f"{quote(key, safe='')}.msgpack"
        return self.versions / f"{quote(f'{key}/{version_name(version)}', safe='')}.msgpack"

    def write(self, archive: Archive, source: str, latest: bool = False) -> None:
        """Store a version of an archive, or (latest) its latest version seen."""
        record = {
            "format": CACHE_FORMAT,
            "version": CACHE_VERSION,
            "ark": archive.manifest.ark,
            "erc": archive.erc.to_anvl(),
            "archive_version": archive.version.to_json(),
            "source": without_secrets(source),
        }
        path = self._path(archive.manifest.ark, None if latest else archive.version.version)
        _write_framed(path, record, archive.manifest.msgpack_pieces())

    def write_object(self, obj: RemoteObject) -> None:
        """Store the record of what an ARK resolves to, a plain HTTP object, with its URL
        as without_secrets writes it: a signed URL's signature (or a userinfo) stays in
        memory. Offline, such a record names blocks under the stripped URL, which the
        disk cache does not hold: the object is then read again once its resolver answers,
        rather than a credential being kept on disk."""
        plain = {**obj.to_json(), "url": without_secrets(obj.url)}
        record = {"format": CACHE_FORMAT, "version": CACHE_VERSION, "object": plain}
        _write_framed(self._object_path(obj.ark), record)

    def read_object(self, key: str) -> RemoteObject | None:
        """The last record stored of the object key resolves to, or None. A damaged file is
        logged once and removed: it counts as absent."""
        return _load(self._object_path(key), "object record", lambda d: _unpack_object(d, key))

    def _object_path(self, key: str) -> Path:
        return self.objects / f"{quote(key, safe='')}.msgpack"

    def read(self, key: str, version: int | None = None) -> tuple[Archive, str] | None:
        """Version version of the archive key (None: the latest seen) and the name of the
        backend it came from, or None.

        A damaged file is logged once and removed: it counts as absent.
        """
        return _load(self._path(key, version), "archive", lambda d: _unpack(d, key, version))

    def keys(self) -> list[str]:
        """The normalized ARKs of every archive with a latest version cached."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return [
            unquote(n.removesuffix(".msgpack"))
            for n in names
            if n.endswith(".msgpack") and not is_temp(n)
        ]


def _unpack(data: bytes, key: str, version: int | None) -> tuple[Archive, str]:
    """The archive version and its source from a cache file's bytes; DamagedCacheFile if
    they are damaged or not of that version of key (None: any)."""
    obj, manifest_bytes = _record(data)
    try:
        manifest = Manifest.from_msgpack(manifest_bytes)
        if manifest.ark != key:
            raise ValueError(f"it holds {manifest.ark}")
        info = VersionInfo.from_json(key, obj["archive_version"])
        if version is not None and info.version != version:
            raise ValueError(f"it holds version {info.version}")
        archive = Archive(manifest, Erc.from_anvl(obj["erc"]), info)
        return archive, str(obj["source"])
    except (
        msgpack.UnpackException,
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        ArkError,
    ) as exc:
        raise DamagedCacheFile(str(exc)) from None


def _unpack_object(data: bytes, key: str) -> RemoteObject:
    """The object record of key from a cache file's bytes; DamagedCacheFile if damaged."""
    try:
        found = RemoteObject.from_json(_record(data)[0]["object"])
    except (ValueError, TypeError, KeyError) as exc:
        raise DamagedCacheFile(str(exc)) from None
    if found.ark != key:
        raise DamagedCacheFile(f"it holds {found.ark}")
    return found


def _load(path: Path, what: str, unpack: Callable[[bytes], T]) -> T | None:
    """unpack(the bytes of path); None if absent, unreadable, or damaged (logged, and the
    damaged file removed)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.error("cannot read the cached %s %s: %s", what, path, exc.strerror or exc)
        return None
    try:
        return unpack(data)
    except DamagedCacheFile as exc:
        log.warning("removing the damaged cached %s %s: %s", what, path, exc)
        path.unlink(missing_ok=True)
        return None


def _record(data: bytes) -> tuple[Any, memoryview]:
    """The msgpack map a cache file holds, of this format and version, and what follows it
    (a manifest); DamagedCacheFile if it fails its digest or is not one."""
    body = _unframe(data)
    size = int.from_bytes(body[:RECORD_SIZE], "big")
    try:
        obj = msgpack.unpackb(body[RECORD_SIZE : RECORD_SIZE + size], raw=False)
        if not isinstance(obj, dict):
            raise ValueError("not a map")
        if obj.get("format") != CACHE_FORMAT or obj.get("version") != CACHE_VERSION:
            raise ValueError(f"not a version {CACHE_VERSION} {CACHE_FORMAT} file")
    except (msgpack.UnpackException, ValueError) as exc:
        raise DamagedCacheFile(str(exc)) from None
    return obj, body[RECORD_SIZE + size :]


def _write_framed(path: Path, record: dict[str, Any], tail: list[bytes] | None = None) -> None:
    """Write the BLAKE3 digest of the body, then the body: the size of record in msgpack,
    record, the pieces of tail."""
    packed = msgpack.packb(record, use_bin_type=True)
    body = [len(packed).to_bytes(RECORD_SIZE, "big"), packed, *(tail or [])]
    digest = blake3.blake3()
    for piece in body:
        digest.update(piece)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, [digest.digest(), *body], durable=False)  # read back behind its digest


def _unframe(data: bytes) -> memoryview:
    """The body of a file _write_framed wrote; DamagedCacheFile if it fails its digest."""
    digest, body = data[:HASH_SIZE], memoryview(data)[HASH_SIZE:]
    if blake3.blake3(body).digest() != digest:
        raise DamagedCacheFile(
            "its digest does not match its contents (damaged, or from an older arkfs)"
        )
    return body
