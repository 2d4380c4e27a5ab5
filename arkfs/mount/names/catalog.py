"""ARK resolution for the mount: NAAN to backends, and each archive version fetched once.

Which backends answer for a NAAN: the resolvers the config file (config.py) names for it,
else the `--server` URLs and the config's `servers`, then the embedded store if one is
named (`--store`, `store`) or nothing else is configured. An ARK none of them binds is
then resolved through the NAAN registries and the fallback resolver (discovery.py), when
the mount has them.

A version of an archive (manifest, ERC, version record) never changes: it is fetched from
its backends once and written to the archive cache (archive_cache.py) as `ARK/@vN`. Which
version is the latest is asked of the backends whenever the caller wants to know (the
mount's LatestVersions decides when), and the latest seen is cached under the ARK itself:
when every backend is unreachable that copy serves, so a remount works offline. A backend
that was unreachable is skipped, so an offline mount does not wait on retries at every
lookup; when a lookup needs it, it gets one quick probe (PROBE_TIMEOUT) at most once per
window of the one unreachable-endpoint rule (net.reachability), so a server that is back
is used again within seconds.
"""

import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import trio

from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.version_qualifier import version_name
from arkfs.backend.base import Backend, BackendError, NotBound, Unreachable
from arkfs.backend.remote import RemoteBackend
from arkfs.mount.names.archive_cache import ArchiveCache
from arkfs.mount.names.discovery import DiscoveredBackends
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.net.reachability import Reachability, State
from arkfs.resolver.objects import ObjectReader, RemoteObject
from arkfs.util.lru import LRU

log = logging.getLogger(__name__)

PROBE_TIMEOUT = 1.0  # seconds such a probe may take
NEGATIVE_TIME = 10.0  # seconds an unbound ARK is answered from memory
MAX_UNBOUND = 4096  # unbound ARKs remembered before expired ones are pruned
LIST_TIME = 30.0  # seconds a listing of bound ARKs is reused
MEMORY_ARCHIVES = 16  # archives kept in memory beyond those the kernel still holds
TOKEN_ROUTE = "/v1/token"  # where an arkfs server hands out CAS tokens
PROBE_HASH = bytes(32)  # a file hash no CAS holds: probes the CAS token without side effects
T = TypeVar("T")


def naan_of(key: str) -> str:
    """The NAAN of a normalized ark:NAAN/Name."""
    return key[len("ark:") :].split("/", 1)[0]


class Catalog:
    """Backends per NAAN, and the archive versions of one mount: in memory, on disk,
    fetched once."""

    def __init__(
        self,
        general: list[Backend],
        by_naan: dict[str, list[Backend]],
        cache_root: Path,
        discovery: DiscoveredBackends | None = None,
        remote: Callable[[str], Backend] | None = None,
    ) -> None:
        if not general and not by_naan and discovery is None:
            raise ValueError("a catalog needs at least one backend")
        self._general = general
        self._by_naan = by_naan
        self._discovery = discovery
        self._remote = remote  # makes the backend of a CAS a manifest names elsewhere
        self._cas: dict[str, Backend] = {}
        self.disk = ArchiveCache(cache_root)
        self._memory: LRU[str, IndexedArchive] = LRU(MEMORY_ARCHIVES)  # by ARK/@vN
        self._latest_on_disk: dict[str, int] = {}  # ARK -> the version cached as its latest
        self._objects_on_disk: LRU[str, RemoteObject] = LRU(MAX_UNBOUND)  # ARK -> record stored
        self._unbound: dict[str, float] = {}  # ARK -> until when it is known unbound
        self._reach = Reachability()  # which backends (by name) just did not answer
        self._locks: dict[str, trio.Lock] = {}
        self._listings: dict[str, tuple[float, list[str]]] = {}

    @property
    def backends(self) -> list[Backend]:
        """Every backend, each once."""
        seen: dict[int, Backend] = {id(b): b for b in self._general}
        for group in self._by_naan.values():
            seen.update((id(b), b) for b in group)
        if self._discovery is not None:
            seen.update((id(b), b) for b in self._discovery.backends)
        return list(seen.values())

    def _configured(self) -> list[Backend]:
        """The backends the user configured (not found by discovery)."""
        return [*self._general, *(b for group in self._by_naan.values() for b in group)]

    def backends_for(self, naan: str) -> list[Backend]:
        """The backends that answer for a NAAN, in the order they are asked."""
        return self._by_naan.get(naan) or self._general

    def loaded(self) -> list[IndexedArchive]:
        """The archives held in memory."""
        return [archive for _, archive in self._memory.items()]

    def _mark_down(self, backend: Backend, exc: BackendError) -> None:
        if self._reach.failed(backend.name, str(exc)):
            log.error("%s is unreachable, using cached archives: %s", backend.name, exc)

    async def _usable(self, backend: Backend) -> bool:
        """Whether to ask backend now: yes, unless it was unreachable and a quick probe (at
        most one per window, so offline lookups fail fast) finds it still is."""
        state = self._reach.state(backend.name)
        if state is not State.DUE:
            return state is State.UP
        self._reach.probing(backend.name)  # the only probe till the window passes
        with trio.move_on_after(PROBE_TIMEOUT):
            try:
                await backend.has_file(PROBE_HASH, 1)
            except Unreachable:
                return False
            except BackendError:
                pass  # it answers: the lookup itself says what is wrong
            self._reach.answered(backend.name)
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

    async def _ask(self, key: str, call: Callable[[Backend], Awaitable[T]]) -> tuple[T, Backend]:
        """call on the first backend of key's NAAN that binds key, and that backend; then on
        the backend discovery finds for key, if none of them did.

        Raises the error of a backend that refused, else Unreachable if one could not be
        reached, else NotBound (remembered for NEGATIVE_TIME).
        """
        if self._unbound.get(key, 0.0) > time.monotonic():
            raise NotBound(f"no archive is bound to {key}")
        errors = _Errors()
        for backend in self.backends_for(naan_of(key)):
            if (done := await self._try(key, backend, call, errors)) is not None:
                return done
        if self._discovery is not None and errors.refused is None:
            found = await self._discover(key, errors)
            if found is not None and (done := await self._try(key, found, call, errors)):
                return done
        if errors.refused is not None:
            raise errors.refused
        if errors.unreachable is not None:
            raise errors.unreachable
        now = time.monotonic()
        if len(self._unbound) > MAX_UNBOUND:
            self._unbound = {k: t for k, t in self._unbound.items() if t > now}
        self._unbound[key] = now + NEGATIVE_TIME
        raise NotBound(f"no archive is bound to {key}")

    async def _try(
        self, key: str, backend: Backend, call: Callable[[Backend], Awaitable[T]], errors: "_Errors"
    ) -> tuple[T, Backend] | None:
        """call on backend, and backend; None (its error kept in errors) if it failed."""
        if not await self._usable(backend):
            errors.unreachable = errors.unreachable or Unreachable(f"{backend.name} is unreachable")
            return None
        try:
            return await call(backend), backend
        except NotBound:
            return None
        except Unreachable as exc:
            self._mark_down(backend, exc)
            errors.unreachable = errors.unreachable or exc
        except BackendError as exc:
            log.error("cannot fetch %s from %s: %s", key, backend.name, exc)
            errors.refused = exc
        return None

    async def _discover(self, key: str, errors: "_Errors") -> Backend | None:
        """The backend discovery finds for key; None (its error kept) if it finds none."""
        assert self._discovery is not None
        try:
            return await self._discovery.backend_for(key)
        except NotBound:
            return None
        except Unreachable as exc:
            errors.unreachable = errors.unreachable or exc
        except BackendError as exc:  # raised by _ask, and logged once where it is answered
            errors.refused = exc
        return None

    async def remote_object(self, key: str) -> RemoteObject | None:
        """What a normalized ark:NAAN/Name no backend binds resolves to, when discovery
        finds an object that is not an arkfs archive; else None. Each record found is kept
        on disk, and serves when its responder (or a hop to it) is unreachable, so a
        remount reads the object's cached blocks offline."""
        if self._discovery is None:
            return None
        try:
            obj = await self._discovery.object_for(key)
        except Unreachable:
            cached = await self.cached_object(key)
            if cached is None:
                raise
            return cached
        if obj is not None and self._objects_on_disk.get(key) != obj:
            try:
                await trio.to_thread.run_sync(self.disk.write_object, obj)
                self._objects_on_disk.put(key, obj)
            except OSError as exc:
                log.error("cannot cache %s on disk: %s", key, exc)
        return obj

    async def cached_object(self, key: str) -> RemoteObject | None:
        """The record of the object key resolved to, as last seen and kept on disk."""
        if self._discovery is None:
            return None
        cached = await trio.to_thread.run_sync(self.disk.read_object, key)
        if cached is not None:
            log.info("%s is unreachable; the record of its object cached on disk serves", key)
        return cached

    def resolved_url(self, key: str) -> str | None:
        """The URL key's archive was found at by discovery (registries, fallback), if so."""
        return None if self._discovery is None else self._discovery.resolved_url(key)

    @property
    def objects(self) -> ObjectReader:
        """What fetches the blocks of remote objects (see arkfs.resolver.objects)."""
        assert self._discovery is not None
        return self._discovery.objects

    async def versions(self, key: str) -> list[VersionInfo]:
        """Every version of the archive bound to a normalized ark:NAAN/Name, asked now."""
        versions, _ = await self._ask(key, lambda b: b.versions(key))
        return versions

    async def latest(self, key: str) -> tuple[IndexedArchive, list[VersionInfo] | None]:
        """The latest version of the archive bound to a normalized ark:NAAN/Name, asked of
        its backends now, and every version (None when the backends are unreachable and
        the latest seen, cached on disk, serves instead, so a remount works offline).

        Only an unreachable backend lets the cached copy serve: one that answers is the
        authority on what is bound. Raises NotBound, Unreachable when there is no copy,
        or the backend's error.
        """
        try:
            versions = await self.versions(key)
        except Unreachable:
            cached = await self._from_disk(key, None)
            if cached is None:
                raise
            return self._keep(cached), None
        found = await self.archive(key, versions[-1].version, as_latest=True)
        if self._latest_on_disk.get(key) != found.version:
            try:
                await trio.to_thread.run_sync(
                    lambda: self.disk.write(found.record, found.backend.name, latest=True)
                )
                self._latest_on_disk[key] = found.version
            except OSError as exc:
                log.error("cannot cache %s on disk: %s", key, exc)
        return found, versions

    async def archive(
        self, key: str, version: int | None = None, as_latest: bool = False
    ) -> IndexedArchive:
        """Version version of the archive bound to a normalized ark:NAAN/Name (None: the
        latest, as latest() finds it).

        A version never changes, so it comes from memory or disk when it is there, and
        from its backends only once. as_latest: it is the latest version, so the copy on
        disk a fetch leaves is the latest's (one copy, not two: a 100,000-file manifest
        takes a second to write). Raises NotBound, Unreachable when there is no copy, or
        the backend's error.
        """
        if version is None:
            return (await self.latest(key))[0]
        named = f"{key}/{version_name(version)}"
        found = self._memory.get(named)
        if found is not None:
            return found
        lock = self._locks.setdefault(named, trio.Lock())
        try:
            async with lock:
                found = self._memory.peek(named) or await self._load(key, version, as_latest)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(named, None)
        return self._keep(found)

    def _keep(self, found: IndexedArchive) -> IndexedArchive:
        """Hold found in memory (the most recently used MEMORY_ARCHIVES stay)."""
        self._memory.put(f"{found.key}/{version_name(found.version)}", found)
        return found

    async def _load(self, key: str, version: int, as_latest: bool) -> IndexedArchive:
        """A version from disk (its own copy, or the latest's if that is this version),
        else from its backends (then written to disk: as the latest's copy if as_latest)."""
        cached = await self._from_disk(key, version)
        if cached is None:
            latest = await self._from_disk(key, None)
            if latest is not None and latest.version == version:
                self._latest_on_disk[key] = version  # so latest() does not write it again
                cached = latest
        if cached is not None:
            return cached
        archive, backend = await self._ask(
            f"{key}/{version_name(version)}", lambda b: b.archive(key, version)
        )
        try:
            await trio.to_thread.run_sync(self.disk.write, archive, backend.name, as_latest)
            if as_latest:
                self._latest_on_disk[key] = version
        except OSError as exc:
            log.error("cannot cache %s on disk: %s", key, exc)
        reads = await self._reads_from(archive, backend, backend.name)
        return await trio.to_thread.run_sync(IndexedArchive.build, archive, reads)

    async def _reads_from(self, archive: Archive, backend: Backend, source: str) -> Backend:
        """Where an archive's files are read: the CAS its manifest names (token_url's base,
        else cas_url) when that is not the server it came from (source: a server fills in
        its own URL, which a copy cached on disk keeps after that URL changed), else
        backend. A CAS named by an archive from a discovered server is a URL the network
        gave: it must lead to a public address, as registry targets and redirects must
        (resolver.destinations); one a configured server names is trusted as that server."""
        manifest = archive.manifest
        token_url = (manifest.token_url or "").rstrip("/")
        if token_url.endswith(TOKEN_ROUTE):  # the token route says where the CAS is
            named = token_url.removesuffix(TOKEN_ROUTE)
        else:
            named = (manifest.cas_url or "").rstrip("/")
        if self._remote is None or not isinstance(backend, RemoteBackend):
            return backend
        if not named or named == source:
            return backend
        if self._discovery is not None and backend not in self._configured():
            what = f"the CAS that {archive.manifest.ark}'s manifest names"
            await self._discovery.resolver.destinations.check(named, what)
        if named not in self._cas:
            log.info("%s reads its files from the CAS at %s", archive.manifest.ark, named)
            self._cas[named] = self._remote(named)
        return self._cas[named]

    async def _from_disk(self, key: str, version: int | None) -> IndexedArchive | None:
        found = await trio.to_thread.run_sync(self.disk.read, key, version)
        if found is None:
            return None
        archive, source = found
        backend = next((b for b in self.backends if b.name == source), None)
        if backend is None:
            configured = self.backends_for(naan_of(key))
            if configured or self._discovery is None:
                backend = configured[0]
            else:  # found by discovery in an earlier mount: its service, as it was
                backend = self._discovery.named(source)
        reads = await self._reads_from(archive, backend, source)
        return await trio.to_thread.run_sync(IndexedArchive.build, archive, reads)

    async def aclose(self) -> None:
        """Close every backend, and the resolver."""
        for backend in {id(b): b for b in [*self.backends, *self._cas.values()]}.values():
            await backend.aclose()
        if self._discovery is not None:
            await self._discovery.aclose()


class _Errors:
    """The errors of the backends one lookup asked: the first unreachable, the last refusal."""

    def __init__(self) -> None:
        self.unreachable: Unreachable | None = None
        self.refused: BackendError | None = None
