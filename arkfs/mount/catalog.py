"""ARK resolution for the mount: NAAN to backends, and each archive fetched once per mount.

Which backends answer for a NAAN: the resolvers the config file (config.py) names for it,
else the `--server` URLs and the config's `servers`, then the embedded store if one is
named (`--store`, `store`) or nothing else is configured.

An archive (manifest and ERC) is fetched from its backends once per mount and written to
the archive cache (archive_cache.py); when every backend is unreachable the cached copy
serves, so a remount works offline. A backend that was unreachable is skipped, so an
offline mount does not wait on retries at every lookup; when a lookup needs it, it gets one
quick probe (PROBE_TIMEOUT) at most every PROBE_INTERVAL, so a server that is back is used
again within seconds.
"""

import logging
import time
from pathlib import Path

import trio

from arkfs.backend.base import Backend, BackendError, NotBound, Unreachable
from arkfs.mount.archive_cache import ArchiveCache
from arkfs.mount.indexed import IndexedArchive
from arkfs.util.lru import LRU

log = logging.getLogger(__name__)

PROBE_INTERVAL = 3.0  # seconds between quick probes of a backend that was unreachable
PROBE_TIMEOUT = 1.0  # seconds such a probe may take
NEGATIVE_TIME = 10.0  # seconds an unbound ARK is answered from memory
MAX_UNBOUND = 4096  # unbound ARKs remembered before expired ones are pruned
LIST_TIME = 30.0  # seconds a listing of bound ARKs is reused
MEMORY_ARCHIVES = 16  # archives kept in memory beyond those the kernel still holds
PROBE_HASH = bytes(32)  # a file hash no CAS holds: probes the CAS token without side effects


def naan_of(key: str) -> str:
    """The NAAN of a normalized ark:NAAN/Name."""
    return key[len("ark:") :].split("/", 1)[0]


class Catalog:
    """Backends per NAAN, and the archives of one mount: in memory, on disk, fetched once."""

    def __init__(
        self,
        general: list[Backend],
        by_naan: dict[str, list[Backend]],
        cache_root: Path,
    ) -> None:
        if not general and not by_naan:
            raise ValueError("a catalog needs at least one backend")
        self._general = general
        self._by_naan = by_naan
        self.disk = ArchiveCache(cache_root)
        self._memory: LRU[str, IndexedArchive] = LRU(MEMORY_ARCHIVES)
        self._fetched: set[str] = set()  # archives already fetched from a backend this mount
        self._unbound: dict[str, float] = {}  # ARK -> until when it is known unbound
        self._down: dict[str, float] = {}  # unreachable backend name -> when to probe it
        self._locks: dict[str, trio.Lock] = {}
        self._listings: dict[str, tuple[float, list[str]]] = {}

    @property
    def backends(self) -> list[Backend]:
        """Every backend, each once."""
        seen: dict[int, Backend] = {id(b): b for b in self._general}
        for group in self._by_naan.values():
            seen.update((id(b), b) for b in group)
        return list(seen.values())

    def backends_for(self, naan: str) -> list[Backend]:
        """The backends that answer for a NAAN, in the order they are asked."""
        return self._by_naan.get(naan) or self._general

    def loaded(self) -> list[IndexedArchive]:
        """The archives held in memory."""
        return [archive for _, archive in self._memory.items()]

    def _mark_down(self, backend: Backend, exc: BackendError) -> None:
        if backend.name not in self._down:
            log.error("%s is unreachable, using cached archives: %s", backend.name, exc)
        self._down[backend.name] = time.monotonic() + PROBE_INTERVAL

    async def _usable(self, backend: Backend) -> bool:
        """Whether to ask backend now: yes, unless it was unreachable and a quick probe (at
        most one per PROBE_INTERVAL, so offline lookups fail fast) finds it still is."""
        probe_at = self._down.get(backend.name)
        if probe_at is None:
            return True
        if probe_at > time.monotonic():
            return False
        self._down[backend.name] = time.monotonic() + PROBE_INTERVAL  # the only probe till then
        with trio.move_on_after(PROBE_TIMEOUT):
            try:
                await backend.has_file(PROBE_HASH, 1)
            except Unreachable:
                return False
            except BackendError:
                pass  # it answers: the lookup itself says what is wrong
            self._down.pop(backend.name, None)
            log.info("%s answers again", backend.name)
            return True
        return False

    async def probe(self) -> list[str]:
        """Ask every backend for its archives and a CAS lookup, so a refused token shows now.

        Raises Unauthorized (and other BackendErrors but Unreachable); returns one warning
        per unreachable backend: the mount goes on with cached archives.
        """
        warnings = []
        for backend in self.backends:
            try:
                arks = await backend.list_archives()
                await backend.has_file(PROBE_HASH, 1)
                self._listings[f"{backend.name} "] = (time.monotonic() + LIST_TIME, arks)
            except Unreachable as exc:
                self._mark_down(backend, exc)
                warnings.append(f"{backend.name} is unreachable; serving cached archives ({exc})")
        return warnings

    async def _list(self, backend: Backend, prefix: str) -> list[str] | None:
        """backend.list_archives(prefix), reused for LIST_TIME; None when it fails."""
        key = f"{backend.name} {prefix}"
        cached = self._listings.get(key)
        if cached is not None and cached[0] > time.monotonic():
            return cached[1]
        if not await self._usable(backend):
            return None
        try:
            arks = await backend.list_archives(prefix)
        except Unreachable as exc:
            self._mark_down(backend, exc)
            return None
        except BackendError as exc:
            log.error("cannot list the archives of %s: %s", backend.name, exc)
            return None
        self._listings[key] = (time.monotonic() + LIST_TIME, arks)
        return arks

    async def _bound(self, prefix: str, backends: list[Backend]) -> set[str]:
        """Normalized ARKs starting with prefix that backends bind (each asked only for the
        NAANs it answers for), and the cached ones of NAANs whose backends did not answer."""
        found: set[str] = set()
        failed: list[Backend] = []
        for backend in backends:
            arks = await self._list(backend, prefix)
            if arks is None:
                failed.append(backend)
                continue
            found.update(k for k in arks if backend in self.backends_for(naan_of(k)))
        if failed:
            cached = await trio.to_thread.run_sync(self.disk.keys)
            found.update(
                k
                for k in cached
                if k.startswith(prefix) and any(b in failed for b in self.backends_for(naan_of(k)))
            )
        return found

    async def naans(self) -> list[str]:
        """Every NAAN with a configured resolver or a known archive, sorted."""
        found = {naan_of(k) for k in await self._bound("", self.backends)}
        return sorted(found | self._by_naan.keys())

    async def names(self, naan: str) -> list[str]:
        """The Names bound under a NAAN, sorted."""
        prefix = f"ark:{naan}/"
        keys = await self._bound(prefix, self.backends_for(naan))
        return sorted(k[len(prefix) :] for k in keys if "/" not in k[len(prefix) :])

    async def archive(self, key: str) -> IndexedArchive:
        """The archive bound to a normalized ark:NAAN/Name.

        Raises NotBound when no backend binds it and no copy is cached, Unreachable when
        its backends are down and no copy is cached, or the backend's own error.
        """
        found = self._memory.get(key)
        if found is not None:
            return found
        if self._unbound.get(key, 0.0) > time.monotonic():
            raise NotBound(f"no archive is bound to {key}")
        lock = self._locks.setdefault(key, trio.Lock())
        try:
            async with lock:
                found = self._memory.peek(key) or await self._load(key)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)
        self._memory.put(key, found)
        return found

    async def _load(self, key: str) -> IndexedArchive:
        if key in self._fetched:
            cached = await self._from_disk(key)
            if cached is not None:
                return cached
        unreachable: Unreachable | None = None
        refused: BackendError | None = None
        for backend in self.backends_for(naan_of(key)):
            if not await self._usable(backend):
                unreachable = unreachable or Unreachable(f"{backend.name} is unreachable")
                continue
            try:
                archive = await backend.archive(key)
            except NotBound:
                continue
            except Unreachable as exc:
                self._mark_down(backend, exc)
                unreachable = unreachable or exc
                continue
            except BackendError as exc:
                log.error("cannot fetch %s from %s: %s", key, backend.name, exc)
                refused = exc
                continue
            self._fetched.add(key)
            try:
                await trio.to_thread.run_sync(self.disk.write, archive, backend.name)
            except OSError as exc:
                log.error("cannot cache %s on disk: %s", key, exc)
            return await trio.to_thread.run_sync(IndexedArchive.build, archive, backend)
        if refused is not None:
            raise refused
        if unreachable is not None:
            # Only an unreachable backend lets the disk copy serve: one that answers is
            # the authority on what is bound.
            cached = await self._from_disk(key)
            if cached is None:
                raise unreachable
            return cached
        now = time.monotonic()
        if len(self._unbound) > MAX_UNBOUND:
            self._unbound = {k: t for k, t in self._unbound.items() if t > now}
        self._unbound[key] = now + NEGATIVE_TIME
        raise NotBound(f"no archive is bound to {key}")

    async def _from_disk(self, key: str) -> IndexedArchive | None:
        found = await trio.to_thread.run_sync(self.disk.read, key)
        if found is None:
            return None
        archive, source = found
        backends = self.backends_for(naan_of(key))
        backend = next((b for b in backends if b.name == source), backends[0])
        return await trio.to_thread.run_sync(IndexedArchive.build, archive, backend)

    async def aclose(self) -> None:
        """Close every backend."""
        for backend in self.backends:
            await backend.aclose()
