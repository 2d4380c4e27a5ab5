"""Which version of each archive the mount shows as its latest, re-checked every metadata TTL.

`ARKDIR` shows the latest version of its archive. The catalog is asked which that is when
the archive is first used, and again at its first use once metadata_ttl seconds have
passed (one small request: the list of versions). When the answer is a new version,
on_new(key) lets the namespace make the kernel forget what it cached of the old one;
nothing of the old version changes, so files open in it keep reading it. While the
backends are unreachable the version shown stays, and is asked again after the TTL.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import trio

from arkfs.archive.record import VersionInfo
from arkfs.backend.base import Unreachable
from arkfs.mount.names.catalog import Catalog
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.util.lru import LRU

SHOWN = 64  # archives whose latest version is held here; others are asked again when used


@dataclass
class _Shown:
    """The version shown of one archive, every version then known, and when to ask again."""

    archive: IndexedArchive
    versions: list[VersionInfo]
    until: float  # time.monotonic() of the next check


class LatestVersions:
    """The latest version of each archive the mount shows, re-checked after ttl seconds."""

    def __init__(self, catalog: Catalog, ttl: float, on_new: Callable[[str], None]) -> None:
        if ttl < 0:
            raise ValueError(f"the metadata TTL must be >= 0 seconds, got {ttl}")
        self.catalog = catalog
        self.ttl = ttl
        self._on_new = on_new
        self._shown: LRU[str, _Shown] = LRU(SHOWN)
        self._seen: dict[str, int] = {}  # ARK -> the version last shown, held or not
        self._locks: dict[str, trio.Lock] = {}

    async def get(self, key: str) -> IndexedArchive:
        """The version of a normalized ark:NAAN/Name shown as its latest."""
        return (await self._current(key)).archive

    async def versions(self, key: str) -> list[VersionInfo]:
        """Every version of key, as the last check found them (oldest first)."""
        return (await self._current(key)).versions

    def time_left(self, key: str) -> float:
        """Seconds until key's latest version is asked again (0 when due or never asked):
        how long the kernel may cache what shows it."""
        shown = self._shown.peek(key)
        return max(shown.until - time.monotonic(), 0.0) if shown is not None else 0.0

    async def _current(self, key: str) -> _Shown:
        shown = self._shown.get(key)
        if shown is not None and time.monotonic() < shown.until:
            return shown
        lock = self._locks.setdefault(key, trio.Lock())
        try:
            async with lock:  # one check at a time per archive; the others use its answer
                shown = self._shown.get(key)
                if shown is None or time.monotonic() >= shown.until:
                    shown = await self._check(key, shown)
                    self._shown.put(key, shown)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)
        return shown

    async def _check(self, key: str, shown: _Shown | None) -> _Shown:
        """Ask which version is the latest now; call on_new when it is another one."""
        try:
            archive, versions = await self.catalog.latest(key)
        except Unreachable:
            if shown is None:
                raise
            archive, versions = shown.archive, None
        until = time.monotonic() + self.ttl
        if shown is not None and archive.version <= shown.archive.version:
            # The same version (or an older copy from disk while offline): keep what shows.
            return _Shown(shown.archive, versions or shown.versions, until)
        if self._seen.get(key, archive.version) != archive.version:
            self._on_new(key)
        self._seen[key] = archive.version
        return _Shown(archive, versions or [archive.record.version], until)
