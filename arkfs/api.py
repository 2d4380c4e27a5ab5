"""Archives from Python without FUSE: `arkfs.open`, `arkfs.info` and `arkfs.resolve`.

The same parts as the mount, assembled the same way: open_catalog (mount/daemon.py) makes
the backends from the same settings (servers, store, config file, registries, tokens by
origin), the Catalog resolves ARKs and versions, and the ContentReader reads verified
bytes through the chunk cache. They live in a trio event loop on a thread of their own,
so the calls here are plain blocking functions that work in scripts and notebooks alike.

    with arkfs.Client(server="https://arks.example.org") as client:
        with client.open("ark:12345/x6np1wh8k/data/table.csv") as f:
            head = f.read(100)
"""

import contextlib
import errno
import io
import os
import posixpath
import threading
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar, overload

import trio

from arkfs.archive.manifest import Entry, Kind, entry_path
from arkfs.archive.record import VersionInfo
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError, ArkSyntaxError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.version_qualifier import MARK, split_version, version_name, versioned
from arkfs.backend.base import BackendError, NotBound
from arkfs.mount.backends import MountError, MountOptions, open_catalog
from arkfs.mount.config import (
    DEFAULT_TTL,
    ConfigError,
    Discovery,
    ResolverConfig,
    default_config_path,
    fallback_option,
    is_ttl,
    load_config,
    server_urls,
)
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.reader import ContentReader, ReadError
from arkfs.mount.names.indexed import IndexedArchive
from arkfs.mount.names.latest import LatestVersions
from arkfs.mount.stats import MountStats
from arkfs.net import proxies
from arkfs.util import paths
from arkfs.util.sizes import parse_size

__all__ = ["BadArk", "Client", "Info", "Resolved", "info", "open", "resolve"]

T = TypeVar("T")
DEFAULT_CACHE_SIZE = "10G"  # as the mount's default (cli/settings.py)
BUFFER = 1024 * 1024  # the buffered file's reads: 1 MiB, as the mount's readahead
# A client reads whole files (get's pieces, fsspec's sequential reads): a fetch group twice
# the mount's (chunk_loader.GROUP_BYTES) halves the requests per GiB, and the server's
# per-request CPU with them.
CLIENT_GROUP_BYTES = 16 * 1024 * 1024
MAX_SYMLINKS = 40  # links followed inside an archive before ELOOP, as Linux


@dataclass(frozen=True)
class Resolved:
    """Where an ARK leads: the archive version, the path inside it, and who serves it."""

    ark: str  # normalized, with its version: ark:NAAN/Name/@vN[/path]
    archive: str  # ark:NAAN/Name
    version: int
    path: str  # '' for the archive itself
    entry: Entry | None  # None for the archive itself
    backend: str  # the server URL or store the files are read from
    top: Entry  # entry, or the archive's root directory (Manifest.top: its mode and mtime)


@dataclass(frozen=True)
class Info:
    """What an archive says of itself and of one of its entries."""

    resolved: Resolved
    erc: Erc
    versions: list[VersionInfo]


class Client:
    """The backends, catalog and reader of one set of settings, on their own trio thread.

    Settings mean what `arkfs mount`'s options do: server URLs, an embedded store, a read
    token (or token file) for those servers, the cache directory and size, NAAN registries,
    the config file (default: $ARKFS_CONFIG, else the usual path, if present) and the
    metadata TTL: an ARK without @vN names the latest version as last asked, asked again
    once metadata_ttl seconds have passed, as in the mount.
    """

    def __init__(
        self,
        server: str | list[str] | tuple[str, ...] = (),
        *,
        store: str | Path | None = None,
        token: str | None = None,
        token_file: str | Path | None = None,
        cache_dir: str | Path | None = None,
        cache_size: str | int = DEFAULT_CACHE_SIZE,
        registry: str | list[str] | tuple[str, ...] = (),
        fallback: str | bool | None = None,
        allow_private: bool = False,
        config: str | Path | None = None,
        metadata_ttl: float | None = None,
    ) -> None:
        servers = (server,) if isinstance(server, str) else tuple(server)
        registries = (registry,) if isinstance(registry, str) else tuple(registry)
        try:
            if servers:
                server_urls(list(servers), "server")
            if isinstance(fallback, str):  # a URL, or "off" as on the command line
                fallback = fallback_option(fallback)
            resolver = load_config(Path(config) if config else default_config_path(), bool(config))
            if resolver.proxies:  # the config's proxies carry every request from now on
                proxies.use(resolver.proxies, f"config file {resolver.path}: proxies")
        except (ConfigError, proxies.ProxyError) as exc:
            raise ValueError(str(exc)) from None
        token_file = token_file or _setting(resolver, "token_file")
        if token is None and token_file is not None:
            token = _read_token(Path(token_file).expanduser())
        if token is None:
            token = os.environ.get("ARKFS_TOKEN") or None
        cache_dir = cache_dir or _setting(resolver, "cache_dir") or paths.cache_dir()
        cache = Path(os.path.abspath(Path(cache_dir).expanduser()))
        size = cache_size if isinstance(cache_size, int) else parse_size(cache_size)
        discovery = Discovery(registries, fallback, allow_private)
        ttl = metadata_ttl if metadata_ttl is not None else resolver.metadata_ttl
        if ttl is not None and not is_ttl(ttl):
            raise ValueError(f"metadata_ttl {ttl!r} is not a number of seconds >= 0")
        self.metadata_ttl = DEFAULT_TTL if ttl is None else float(ttl)
        self.options = _options(servers, store, resolver, discovery, cache, size, token)
        self.generation = 0  # how many times the trio thread was started in this object
        self._forked = False
        self._fork_lock = threading.Lock()
        self._start()
        _clients.add(self)

    def _start(self) -> None:
        """Start the trio thread and wait until it hosts the catalog and the reader."""
        self._token: trio.lowlevel.TrioToken | None = None
        self._closed: trio.Event | None = None
        self._failure: BaseException | None = None
        started = threading.Event()
        self._thread = threading.Thread(
            target=trio.run, args=(self._main, started), name="arkfs-client", daemon=True
        )
        self._thread.start()
        started.wait()
        if self._failure is not None:
            raise self._failure
        self.generation += 1

    def _after_fork(self) -> None:
        """In a forked child (a DataLoader worker, say): the parent's trio thread is not
        here; an open client starts its own at its next call."""
        self._fork_lock = threading.Lock()  # the parent's may have been held
        self._forked = self._token is not None

    async def _main(self, started: threading.Event) -> None:
        """Open the catalog and the reader, host the reader until close()."""
        try:
            self.catalog = await open_catalog(self.options)
            self.latest = LatestVersions(self.catalog, self.metadata_ttl, lambda key: None)
        except MountError as exc:
            self._failure = OSError(errno.EINVAL, str(exc))
            started.set()
            return
        try:
            cache = ChunkCache(self.options.cache_dir, self.options.cache_size)
            self.reader = ContentReader(cache, MountStats(), group_bytes=CLIENT_GROUP_BYTES)
            async with trio.open_nursery() as nursery:
                await nursery.start(self.reader.run)
                self._token = trio.lowlevel.current_trio_token()
                self._closed = trio.Event()
                started.set()
                await self._closed.wait()
                await self.reader.aclose()
                nursery.cancel_scope.cancel()
        finally:
            started.set()
            await self.catalog.aclose()

    def call(self, fn: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run the async fn(*args) on the client's trio thread; errors as OSError."""
        if self._forked:
            with self._fork_lock:
                if self._forked:
                    self._start()
                    self._forked = False
        if self._token is None or not self._thread.is_alive():
            raise OSError(errno.EBADF, "this arkfs client is closed")
        return trio.from_thread.run(_mapped, fn, *args, trio_token=self._token)

    def _end_stream(self, stream: object) -> None:
        """Tell the reader a file is closed, if its thread runs here (not in a forked child
        that has not used the client: the parent's thread would never answer). Nothing
        waits for it: a get of 1,000 small files waited 5 ms a file for the trio thread."""
        if self._token is not None and self._thread.is_alive():
            with contextlib.suppress(trio.RunFinishedError):  # closed meanwhile
                self._token.run_sync_soon(self.reader.end_stream, stream)

    def close(self) -> None:
        """Finish the cache writes under way, close the backends and end the thread."""
        if self._token is not None and self._closed is not None and self._thread.is_alive():
            trio.from_thread.run_sync(self._closed.set, trio_token=self._token)
            self._thread.join()
        self._token = None

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the API ---------------------------------------------------------------------------

    def resolve(self, ark: str) -> Resolved:
        """Where ark leads (version, path, entry, backend); FileNotFoundError if nowhere."""
        return self.call(self._locate, ark)[1]

    def info(self, ark: str) -> Info:
        """The ERC record, every version, and the entry ark names."""
        return self.call(self._info, ark)

    def listdir(self, ark: str) -> list[Resolved]:
        """What the directory ark names holds, in path order; a symlink as its target."""
        return self.call(self._list, ark)

    def naans(self) -> list[str]:
        """The NAANs with a configured server or store, or an archive seen, sorted (the
        mount's top directory)."""
        return self.call(self.catalog.naans)

    def names(self, naan: str) -> list[str]:
        """The Names of the archives bound under naan, sorted (the mount's ark:NAAN/)."""
        return self.call(self.catalog.names, naan)

    def tree(self, ark: str) -> tuple[Resolved, list[Entry]]:
        """What ark names and every entry below it (symlinks as they are), in path order."""
        return self.call(self._tree, ark)

    @overload
    def open(self, ark: str, mode: Literal["rb"] = "rb") -> "io.BufferedReader[ArkFile]": ...

    @overload
    def open(
        self, ark: str, mode: Literal["r", "rt"], encoding: str = "utf-8", errors: str | None = None
    ) -> io.TextIOWrapper: ...

    def open(
        self, ark: str, mode: str = "rb", encoding: str = "utf-8", errors: str | None = None
    ) -> "io.BufferedReader[ArkFile] | io.TextIOWrapper":
        """A seekable file of the bytes of the file ark names, verified as read: binary
        ('rb'), or text ('r', 'rt'; UTF-8 unless encoding says otherwise)."""
        return self._open(ark, mode, encoding, errors)

    def _open(
        self, ark: str, mode: str, encoding: str, errors: str | None
    ) -> "io.BufferedReader[ArkFile] | io.TextIOWrapper":
        if mode not in ("rb", "r", "rt"):
            raise ValueError(f"mode {mode!r}: archives are read-only; use 'rb', or 'r' for text")
        archive, found = self.call(self._locate, ark)
        binary = io.BufferedReader(ArkFile(self, archive, self._file(found), found.ark), BUFFER)
        return binary if mode == "rb" else io.TextIOWrapper(binary, encoding, errors)

    def open_listed(self, ark: str, entry: Entry) -> "io.BufferedReader[ArkFile]":
        """What open(ark) gives, for the file entry of a version-pinned ark (ark:NAAN/Name/@vN/
        PATH) that tree() or listdir() listed: located by its first read, in the same call
        to the trio thread (a get of 1,000 small files saved a round trip per file)."""
        return io.BufferedReader(ArkFile(self, None, entry, ark), BUFFER)

    def preload(self, ark: str, entries: Sequence[Entry]) -> None:
        """Start loading what reads of entries (files of the version-pinned archive ark,
        as tree() listed them, in the order they will be read) need first, many files to
        a request where the server allows: a get of 1,000 small files had asked once per
        file."""
        self.call(self._preload, ark, entries)

    def preload_files(self, arks: Sequence[str]) -> None:
        """preload() for files each named by an ARK of its own, of any archives, in the
        order they will be read: what fsspec's cat of a list reads. A name that leads to
        no file is left to its own read to report."""
        self.call(self._preload_files, arks)

    async def _preload(self, ark: str, entries: Sequence[Entry]) -> None:
        archive, _ = await self._locate(ark)
        self.reader.preload(archive.backend, _files(entries))

    async def _preload_files(self, arks: Sequence[str]) -> None:
        found: dict[int, tuple[IndexedArchive, list[Entry]]] = {}  # by backend
        failed: set[tuple[str, int | None]] = set()  # archives not found: asked once
        for ark in arks:
            try:
                base, version, _ = split_ark(ark)
                if (str(base), version) in failed:
                    continue
                archive, where = await self._locate(ark)
            except BackendError:
                failed.add((str(base), version))
                continue
            except (OSError, ArkError):
                continue
            if where.entry is not None:
                found.setdefault(id(archive.backend), (archive, []))[1].append(where.entry)
        for archive, entries in found.values():
            self.reader.preload(archive.backend, _files(entries))

    def _file(self, found: Resolved) -> Entry:
        """The file entry found names: a directory is refused."""
        if found.entry is None or found.entry.kind == Kind.DIR:
            raise IsADirectoryError(errno.EISDIR, f"{found.ark} is a directory")
        return found.entry

    async def _list(self, ark: str) -> list[Resolved]:
        archive, found = await self._locate(ark)
        if found.entry is not None and found.entry.kind != Kind.DIR:
            raise NotADirectoryError(errno.ENOTDIR, f"{found.ark} is not a directory")
        out = []
        for child in archive.manifest.children(found.path):
            entry: Entry | None = child
            if child.kind == Kind.SYMLINK:
                with contextlib.suppress(OSError):  # dangling: listed as the link it is
                    entry = _follow(archive, child.path)[0]
            named = f"{archive.key}/{version_name(archive.version)}/{child.path}"
            out.append(_resolved(archive, named, child.path, entry, found.backend))
        return out

    async def _tree(self, ark: str) -> tuple[Resolved, list[Entry]]:
        archive, found = await self._locate(ark)
        if found.entry is not None and found.entry.kind != Kind.DIR:
            return found, []
        prefix = f"{found.path}/" if found.path else ""
        return found, [e for e in archive.manifest.entries if e.path.startswith(prefix)]

    async def _info(self, ark: str) -> Info:
        archive, found = await self._locate(ark)
        versions = await self.catalog.versions(archive.key)
        return Info(found, archive.erc, versions)

    async def _locate(self, text: str) -> tuple[IndexedArchive, Resolved]:
        """The archive version text names and what it names inside, symlinks followed.

        After ark:NAAN/Name[/@vN] comes the path as the mount spells it (spaces, hyphens
        and dots as they are), else as an ARK qualifier (`%2D`, ...; archive/manifest.py).
        """
        base, version, path = split_ark(text)
        try:
            if version is None:  # as the mount shows it: asked again after metadata_ttl
                archive = await self.latest.get(str(base))
            else:
                archive = await self.catalog.archive(str(base), version)
        except NotBound as exc:
            raise await self._no_version(str(base), version, exc) from None
        if path and archive.manifest.entry(path) is None:
            root = versioned(archive.ark, version)
            path = entry_path(root, parse(f"{root}/{path}")) or path
        entry, path = _follow(archive, path)
        named = f"{archive.key}/{version_name(archive.version)}" + (f"/{path}" if path else "")
        return archive, _resolved(archive, named, path, entry, archive.backend.name)

    async def _no_version(self, key: str, version: int | None, unbound: NotBound) -> NotBound:
        """What to say when key's version is not found: which version is the latest, when
        the archive is bound (else unbound as it is). Only here, not in the catalog: the
        mount answers a missing @vN with ENOENT and no extra request."""
        if version is None:
            return unbound
        try:
            versions = await self.catalog.versions(key)
        except BackendError:
            return unbound
        if not versions:
            return unbound
        return NotBound(f"{key} has no version {version}: its latest is v{versions[-1].version}")


def split_ark(text: str) -> tuple[Ark, int | None, str]:
    """`[ark:][/]NAAN/Name[/@vN][/path]` as (the archive's normalized ARK, the version or None
    for the latest, the path inside as written); ArkError if it names no archive."""
    rest = text.strip()
    if rest[:4].lower() == "ark:":
        rest = rest[4:]
    parts = rest.strip("/").split("/", 2)
    if len(parts) < 2:
        raise ArkSyntaxError(f"{text!r} names no archive: write ark:NAAN/Name[/@vN][/path]")
    base = parse(f"ark:{parts[0]}/{parts[1]}").base
    path = parts[2] if len(parts) > 2 else ""
    first, _, after = path.partition("/")
    if first.startswith(MARK):
        _, version = split_version(base.child(first))
        return base, version, after.strip("/")
    return base, None, path.strip("/")


class ArkFile(io.RawIOBase):
    """The verified bytes of one archive file, read through a Client's ContentReader."""

    def __init__(
        self, client: Client, archive: IndexedArchive | None, entry: Entry, name: str
    ) -> None:
        """The file entry at the version-pinned ARK name (ark:NAAN/Name/@vN/PATH) of
        archive, or, with none, of the archive its first read locates."""
        super().__init__()
        assert entry.xet_hash is not None
        self._client, self._archive, self._entry = client, archive, entry
        self._hash, self.size, self._pos = entry.xet_hash, entry.size, 0
        self.name = name
        self._generation = client.generation  # the trio thread whose catalog gave archive

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(errno.EINVAL, "negative seek position")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = 0
        for part in self.pread_parts(self._pos, len(view)):  # copied once, into buffer
            view[n : n + len(part)] = part
            n += len(part)
        self._pos += n
        return n

    def pread(self, offset: int, length: int) -> bytes:
        """Bytes [offset, offset + length) (fewer at the end), every one verified."""
        return self._read(ContentReader.read, offset, length)

    def pread_parts(self, offset: int, length: int) -> list[bytes | memoryview]:
        """What pread gives, as the verified chunks' views in order, not joined (for
        os.pwritev: no copy in memory)."""
        return self._read(ContentReader.read_parts, offset, length)

    def _read(self, how: Callable[..., Awaitable[T]], offset: int, length: int) -> T:
        if self.closed:
            raise ValueError("I/O operation on closed file")
        got: T = self._client.call(self._read_in_loop, how, offset, length)
        return got

    async def _read_in_loop(self, how: Callable[..., Awaitable[T]], offset: int, length: int) -> T:
        """how(reader, ...) on the client's trio thread, the archive located first for a
        file of open_listed, or in a process forked since the file was opened (that
        thread's copy of the archive: the parent's backends and their connections are not
        this process's)."""
        client = self._client
        if self._archive is None or self._generation != client.generation:
            self._archive, found = await client._locate(self.name)
            if found.entry is None or found.entry.xet_hash != self._hash:
                raise FileNotFoundError(errno.ENOENT, f"{self.name} is no longer that file")
            self._generation = client.generation
        return await how(
            client.reader, self._archive.backend, self._hash, self.size, offset, length, self
        )

    def close(self) -> None:
        if not self.closed:
            self._client._end_stream(self)
        super().close()


async def _mapped(fn: Callable[..., Awaitable[T]], *args: Any) -> T:
    """fn(*args) with the read path's errors mapped, once, to the OSErrors Python expects."""
    try:
        return await fn(*args)
    except ReadError as exc:
        raise OSError(errno.EIO, str(exc)) from None
    except NotBound as exc:
        raise FileNotFoundError(errno.ENOENT, str(exc)) from None
    except BackendError as exc:
        raise OSError(errno.EIO, str(exc)) from None
    except ArkError as exc:
        raise BadArk(errno.EINVAL, str(exc)) from None


class BadArk(OSError):
    """An ARK that is not well formed, or names no version (errno EINVAL): the caller's
    input, which `arkfs get` reports as a usage error (exit 2)."""


_clients: "weakref.WeakSet[Client]" = weakref.WeakSet()  # the open clients, for _forked


def _forked() -> None:
    """After a fork, in the child: every client starts a thread of its own when next used."""
    global _default_lock
    _default_lock = threading.Lock()  # the parent's may have been held
    for client in list(_clients):
        client._after_fork()


os.register_at_fork(after_in_child=_forked)


def _files(entries: Sequence[Entry]) -> list[tuple[bytes, int]]:
    """The (file hash, size) of each of entries that has bytes to read."""
    return [(e.xet_hash, e.size) for e in entries if e.xet_hash is not None and e.size]


def _resolved(
    archive: IndexedArchive, named: str, path: str, entry: Entry | None, backend: str
) -> Resolved:
    """The Resolved of path in archive, named named: entry None is the archive itself."""
    top = archive.manifest.top if entry is None else entry
    return Resolved(named, archive.key, archive.version, path, entry, backend, top)


def _follow(archive: IndexedArchive, path: str) -> tuple[Entry | None, str]:
    """The entry at path (None: the root) with symlinks inside the archive followed, as
    the mount's kernel follows them; FileNotFoundError for a path not in it."""
    for _ in range(MAX_SYMLINKS):
        if path == "":
            return None, path
        entry = archive.manifest.entry(path)
        if entry is None:
            raise FileNotFoundError(errno.ENOENT, f"{archive.key}: no {path!r} in the archive")
        if entry.kind != Kind.SYMLINK:
            return entry, path
        target = posixpath.normpath(posixpath.join(posixpath.dirname(path), entry.target or ""))
        if target.startswith(("/", "..")):
            raise FileNotFoundError(errno.ENOENT, f"{path!r} links outside the archive")
        path = "" if target == "." else target
    raise OSError(errno.ELOOP, f"{archive.key}: too many symlinks at {path!r}")


def _setting(config: ResolverConfig, key: str) -> str | None:
    """A path setting of the config file (relative ones already made absolute), or None."""
    value = config.settings.get(key)
    return None if value is None else str(value)


def _read_token(path: Path) -> str:
    """The token on the first line of path."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or not lines[0].strip():
        raise ValueError(f"the token file {path} is empty: put the token on its first line")
    return lines[0].strip()


def _options(
    servers: tuple[str, ...],
    store: str | Path | None,
    config: ResolverConfig,
    discovery: Discovery,
    cache_dir: Path,
    cache_size: int,
    token: str | None,
) -> MountOptions:
    """The mount's options for these settings: open_catalog reads the backend settings,
    and the mount-only ones (mountpoint, log, sharing) are left at rest."""
    return MountOptions(
        mountpoint=cache_dir,
        servers=servers,
        store=Path(os.path.abspath(Path(store).expanduser())) if store else None,
        config=config,
        cache_dir=cache_dir,
        cache_size=cache_size,
        log_file=None,
        foreground=True,
        token=token,
        discovery=discovery,
    )


_default: Client | None = None
_default_lock = threading.Lock()


def default_client() -> Client:
    """The client of the module functions: settings from the config file and $ARKFS_TOKEN."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


@overload
def open(ark: str, mode: Literal["rb"] = "rb") -> "io.BufferedReader[ArkFile]": ...


@overload
def open(
    ark: str, mode: Literal["r", "rt"], encoding: str = "utf-8", errors: str | None = None
) -> io.TextIOWrapper: ...


def open(
    ark: str, mode: str = "rb", encoding: str = "utf-8", errors: str | None = None
) -> "io.BufferedReader[ArkFile] | io.TextIOWrapper":
    """A seekable file of the file ark names, binary or text (Client.open; the default
    client's settings)."""
    return default_client()._open(ark, mode, encoding, errors)


def info(ark: str) -> Info:
    """The ERC record, every version, and the entry ark names (default client's settings)."""
    return default_client().info(ark)


def resolve(ark: str) -> Resolved:
    """Where ark leads (default client's settings)."""
    return default_client().resolve(ark)
