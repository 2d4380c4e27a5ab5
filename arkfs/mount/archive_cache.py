"""The mount's archive cache: each archive's manifest and ERC on disk, checked before use.

One file per normalized ARK: the BLAKE3 digest of a msgpack body, then the body, as file
maps are stored (file_map.pack_map). The manifest names the hashes every read trusts, so a
damaged copy counts as absent: it is never served, and the next answer from a backend
replaces it.
"""

import logging
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import blake3
import msgpack

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError
from arkfs.util.atomic import is_temp, write_atomic
from arkfs.xet.constants import HASH_SIZE

log = logging.getLogger(__name__)

CACHE_FORMAT = "arkfs-archive-cache"
CACHE_VERSION = 2  # 2: a BLAKE3 digest of the msgpack body comes first
ARCHIVES_DIR = "archives"


class DamagedCacheFile(Exception):
    """A cached archive that fails its digest or does not parse."""


class ArchiveCache:
    """Archives (manifest and ERC) on disk, one file per normalized ARK: the BLAKE3 digest
    of a msgpack body, then the body, as file maps are stored (file_map.pack_map). The
    manifest names the hashes every read trusts, so a cached copy is checked before use.

    Blocking methods: call them from worker threads.
    """

    def __init__(self, root: Path) -> None:
        self.root = root / ARCHIVES_DIR

    def _path(self, key: str) -> Path:
        return self.root / f"{quote(key, safe='')}.msgpack"

    def write(self, archive: Archive, source: str) -> None:
        """Store an archive, replacing an older copy."""
        self.root.mkdir(parents=True, exist_ok=True)
        body = msgpack.packb(
            {
                "format": CACHE_FORMAT,
                "version": CACHE_VERSION,
                "ark": archive.manifest.ark,
                "manifest": archive.manifest.to_msgpack(),
                "erc": archive.erc.to_anvl(),
                "updated": archive.updated,
                "source": source,
            },
            use_bin_type=True,
        )
        write_atomic(self._path(archive.manifest.ark), blake3.blake3(body).digest() + body)

    def read(self, key: str) -> tuple[Archive, str] | None:
        """The cached archive and the name of the backend it came from, or None.

        A damaged file is logged once and removed: it counts as absent.
        """
        path = self._path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            log.error("cannot read the cached archive %s: %s", path, exc.strerror or exc)
            return None
        try:
            return _unpack(data, key)
        except DamagedCacheFile as exc:
            log.warning("removing the damaged cached archive %s: %s", path, exc)
            path.unlink(missing_ok=True)
            return None

    def keys(self) -> list[str]:
        """The normalized ARKs of every cached archive."""
        try:
            names = os.listdir(self.root)
        except FileNotFoundError:
            return []
        return [
            unquote(n.removesuffix(".msgpack"))
            for n in names
            if n.endswith(".msgpack") and not is_temp(n)
        ]


def _unpack(data: bytes, key: str) -> tuple[Archive, str]:
    """The archive and its source from a cache file's bytes; raise DamagedCacheFile."""
    digest, body = data[:HASH_SIZE], data[HASH_SIZE:]
    if blake3.blake3(body).digest() != digest:
        raise DamagedCacheFile(
            "its digest does not match its contents (damaged, or from an older arkfs)"
        )
    try:
        obj: Any = msgpack.unpackb(body, raw=False)
        if obj.get("format") != CACHE_FORMAT or obj.get("version") != CACHE_VERSION:
            raise ValueError(f"not a version {CACHE_VERSION} {CACHE_FORMAT} file")
        manifest = Manifest.from_msgpack(obj["manifest"])
        if manifest.ark != key:
            raise ValueError(f"it holds {manifest.ark}")
        archive = Archive(manifest, Erc.from_anvl(obj["erc"]), float(obj["updated"]))
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
