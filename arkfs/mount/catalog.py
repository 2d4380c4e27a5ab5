"""ARK resolution for the mount: NAAN to backends, and each archive fetched once per mount.

Which backends answer for a NAAN: the resolvers the config file names for it, else the
`--server` URLs and the config's `servers`, then the embedded store if one is named
(`--store`, `store`) or nothing else is configured. The config file is TOML, from
--config, $ARKFS_CONFIG or ~/.config/arkfs/config.toml:

    servers = ["https://archive.example.org"]      # for every NAAN without its own entry
    store = "/srv/arkstore"                          # an embedded store, as --store
    [naans]
    12345 = "https://archive.example.org"
    b1234 = ["https://a.example.org", "https://b.example.org"]

An archive (manifest and ERC) is fetched from its backends once per mount and written to
the disk cache as msgpack behind a BLAKE3 digest, keyed by its normalized ARK; when every
backend is unreachable the disk copy serves, so a remount works offline. A damaged copy
counts as absent: it is never served, and the next answer from a backend replaces it.
A backend that was unreachable is skipped, so an offline mount does not wait on retries at
every lookup; when a lookup needs it, it gets one quick probe (PROBE_TIMEOUT) at most every
PROBE_INTERVAL, so a server that is back is used again within seconds.
"""

import logging
import os
import time
import tomllib
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import blake3
import msgpack
import trio

from arkfs.archive.manifest import Entry, Kind, Manifest
from arkfs.archive.record import Archive
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.naan import check_naan
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend, BackendError, NotBound, Unreachable
from arkfs.util.atomic import is_temp, write_atomic
from arkfs.xet.constants import HASH_SIZE

log = logging.getLogger(__name__)

CONFIG_ENV = "ARKFS_CONFIG"
CACHE_FORMAT = "arkfs-archive-cache"
CACHE_VERSION = 2  # 2: a BLAKE3 digest of the msgpack body comes first
ARCHIVES_DIR = "archives"
PROBE_INTERVAL = 3.0  # seconds between quick probes of a backend that was unreachable
PROBE_TIMEOUT = 1.0  # seconds such a probe may take
NEGATIVE_TIME = 10.0  # seconds an unbound ARK is answered from memory
MAX_UNBOUND = 4096  # unbound ARKs remembered before expired ones are pruned
LIST_TIME = 30.0  # seconds a listing of bound ARKs is reused
MEMORY_ARCHIVES = 16  # archives kept in memory beyond those the kernel still holds
PROBE_HASH = bytes(32)  # a file hash no CAS holds: probes the CAS token without side effects


class ConfigError(Exception):
    """A config file or resolver setting the user must correct."""


@dataclass(frozen=True)
class ResolverConfig:
    """Where archives are resolved: servers for every NAAN, per-NAAN servers, a store."""

    servers: tuple[str, ...] = ()
    naans: dict[str, tuple[str, ...]] = field(default_factory=dict)
    store: Path | None = None


def default_config_path() -> Path:
    """$ARKFS_CONFIG, else config.toml under $XDG_CONFIG_HOME/arkfs or ~/.config/arkfs."""
    if os.environ.get(CONFIG_ENV):
        return Path(os.environ[CONFIG_ENV])
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "arkfs" / "config.toml"


def _urls(value: object, where: str) -> tuple[str, ...]:
    urls = [value] if isinstance(value, str) else value
    if not isinstance(urls, list) or not urls or not all(isinstance(u, str) for u in urls):
        raise ConfigError(f"{where} must be a URL or a list of URLs")
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"{where}: {url!r} is not an http:// or https:// URL")
    return tuple(urls)


def load_config(path: Path, explicit: bool) -> ResolverConfig:
    """Read a config file; a missing file is an empty config unless it was named explicitly."""
    try:
        data = tomllib.loads(path.read_text())
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file {path} does not exist") from None
        return ResolverConfig()
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"config file {path}: {exc}") from None
    unknown = sorted(set(data) - {"servers", "naans", "store"})
    if unknown:
        raise ConfigError(f"config file {path}: unknown key {unknown[0]!r} (servers, naans, store)")
    servers = _urls(data["servers"], f"{path}: servers") if "servers" in data else ()
    naans_table = data.get("naans", {})
    if not isinstance(naans_table, dict):
        raise ConfigError(f"config file {path}: [naans] must be a table of NAAN = URL(s)")
    naans = {}
    for key, value in naans_table.items():
        naan = key.lower()
        try:
            check_naan(naan)
        except ArkError as exc:
            raise ConfigError(f"config file {path}: [naans] {key}: {exc}") from None
        naans[naan] = _urls(value, f"{path}: [naans] {key}")
    store = data.get("store")
    if store is not None and not isinstance(store, str):
        raise ConfigError(f"config file {path}: store must be a directory path")
    # A relative store path is relative to the config file, wherever the mount runs.
    store_dir = path.parent.absolute() / Path(store).expanduser() if store else None
    return ResolverConfig(servers, naans, store_dir)


@dataclass(eq=False)
class LoadedArchive:
    """An archive ready for the namespace: its manifest indexed by path and by directory."""

    ark: Ark
    archive: Archive
    backend: Backend  # where its file contents are read
    index: dict[str, int]  # entry path -> position in manifest.entries
    children: dict[str, list[int]]  # directory path ('' the root) -> child positions
    subdir_counts: dict[str, int]  # directory path -> how many directories it holds
    erc_anvl: str

    @property
    def key(self) -> str:
        return str(self.ark)

    @property
    def manifest(self) -> Manifest:
        return self.archive.manifest

    def entry(self, index: int) -> Entry:
        return self.archive.manifest.entries[index]

    def subdirs(self, path: str) -> int:
        """How many directories directory path holds."""
        return self.subdir_counts.get(path, 0)

    @classmethod
    def build(cls, archive: Archive, backend: Backend) -> "LoadedArchive":
        """Index an archive (blocking: run it in a worker thread)."""
        index: dict[str, int] = {}
        children: dict[str, list[int]] = {"": []}
        subdirs: dict[str, int] = {}
        for i, entry in enumerate(archive.manifest.entries):
            index[entry.path] = i
            children.setdefault(entry.parent, []).append(i)
            if entry.kind is Kind.DIR:
                children.setdefault(entry.path, [])
                subdirs[entry.parent] = subdirs.get(entry.parent, 0) + 1
        ark = parse(archive.manifest.ark)
        return cls(ark, archive, backend, index, children, subdirs, archive.erc.to_anvl())


class DamagedCacheFile(Exception):
    """A cached archive that fails its digest or does not parse."""


class DiskCache:
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
        self.disk = DiskCache(cache_root)
        self._memory: OrderedDict[str, LoadedArchive] = OrderedDict()
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

    def loaded(self) -> list[LoadedArchive]:
        """The archives held in memory."""
        return list(self._memory.values())

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

    async def archive(self, key: str) -> LoadedArchive:
        """The archive bound to a normalized ark:NAAN/Name.

        Raises NotBound when no backend binds it and no copy is cached, Unreachable when
        its backends are down and no copy is cached, or the backend's own error.
        """
        found = self._memory.get(key)
        if found is not None:
            self._memory.move_to_end(key)
            return found
        if self._unbound.get(key, 0.0) > time.monotonic():
            raise NotBound(f"no archive is bound to {key}")
        lock = self._locks.setdefault(key, trio.Lock())
        try:
            async with lock:
                found = self._memory.get(key) or await self._load(key)
        finally:
            if not lock.locked() and lock.statistics().tasks_waiting == 0:
                self._locks.pop(key, None)
        self._memory[key] = found
        self._memory.move_to_end(key)
        while len(self._memory) > MEMORY_ARCHIVES:
            self._memory.popitem(last=False)
        return found

    async def _load(self, key: str) -> LoadedArchive:
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
            return await trio.to_thread.run_sync(LoadedArchive.build, archive, backend)
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

    async def _from_disk(self, key: str) -> LoadedArchive | None:
        found = await trio.to_thread.run_sync(self.disk.read, key)
        if found is None:
            return None
        archive, source = found
        backends = self.backends_for(naan_of(key))
        backend = next((b for b in backends if b.name == source), backends[0])
        return await trio.to_thread.run_sync(LoadedArchive.build, archive, backend)

    async def aclose(self) -> None:
        """Close every backend."""
        for backend in self.backends:
            await backend.aclose()
