"""What a mount, and every reader built like one (arkfs.api, `arkfs get`, fsspec), reads
through: its options (MountOptions), and the backends they name (open_catalog), or the
MountError that says why not.

It imports nothing of FUSE (pyfuse3, the handlers, the inode table): a download starts
without loading them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from arkfs.backend.base import Backend, BackendError
from arkfs.backend.mirrors import MirroredBackend
from arkfs.backend.open import open_backend
from arkfs.backend.remote import RemoteBackend
from arkfs.mount.config import DEFAULT_TTL, Discovery, ResolverConfig
from arkfs.mount.names.catalog import Catalog
from arkfs.mount.names.discovery import DiscoveredBackends
from arkfs.net.bearer import OriginTokens
from arkfs.resolver.discover import Resolver

if TYPE_CHECKING:
    from arkfs.mount.fuse.attributes import Ownership


class MountError(Exception):
    """The mount cannot go ahead; usage when the user must fix the command or its setup."""

    def __init__(self, message: str, usage: bool = False) -> None:
        super().__init__(message)
        self.usage = usage


@dataclass(frozen=True)
class MountOptions:
    """Everything a mount needs, checked by the CLI."""

    mountpoint: Path  # absolute
    servers: tuple[str, ...]
    store: Path | None
    config: ResolverConfig
    cache_dir: Path
    cache_size: int
    log_file: Path | None  # None: stderr (foreground only)
    foreground: bool
    token: str | None = field(default=None, repr=False)  # for the --server URLs only
    metadata_ttl: float = DEFAULT_TTL  # seconds the latest version of an archive is known
    discovery: Discovery = field(default_factory=Discovery)  # --registry, --fallback
    fsname: str = "arkfs"  # the mount's source, as mount and df show it
    sharing: str | None = None  # one of SHARING, or None: the mounting user only
    owner: Ownership | None = None  # None: the mounting user's, no mask
    noexec: bool = False
    xattrs: bool = True  # False: getxattr answers EOPNOTSUPP (-o noxattr)
    hide_xattrs: bool = False  # True: listxattr lists none of arkfs's own (-o hide_xattrs)
    log_level: int = logging.INFO


def mirrored(backends: list[Backend]) -> list[Backend]:
    """The servers of one [naans] entry: mirrors of each other when there are several."""
    return [MirroredBackend(backends)] if len(backends) > 1 else backends


async def open_catalog(opts: MountOptions) -> Catalog:
    """The backends of the mount: per-NAAN resolvers, servers, the embedded store, and
    discovery through registries and the fallback resolver.

    Tokens belong to their origin: a server gets the [tokens] entry of its origin, and
    else, if it was given with --server, the --token; no other server gets one.
    """
    remotes: dict[str, Backend] = {}
    tokens = OriginTokens(opts.config.tokens)
    given = {u.rstrip("/") for u in opts.servers}

    def remote(url: str) -> Backend:
        key = url.rstrip("/")
        if key not in remotes:
            token = tokens.token_for(key) or (opts.token if key in given else None)
            remotes[key] = RemoteBackend(key, token)
        return remotes[key]

    try:
        general = [remote(u) for u in dict.fromkeys((*opts.servers, *opts.config.servers))]
        by_naan = {n: mirrored([remote(u) for u in urls]) for n, urls in opts.config.naans.items()}
        found = opts.discovery.sources(opts.config)
        discovery = None
        if found is not None:
            resolver = Resolver(
                list(found[0]),
                found[1],
                opts.cache_dir,
                tokens,
                opts.discovery.allows_private(opts.config),
            )
            discovery = DiscoveredBackends(resolver, tokens)
        store = opts.store or opts.config.store
        if store is not None or not (general or by_naan or discovery):
            general.append(
                await trio.to_thread.run_sync(lambda: open_backend(None, store, None, create=False))
            )
    except BackendError as exc:
        for backend in remotes.values():
            await backend.aclose()
        raise MountError(str(exc), usage=True) from None
    return Catalog(general, by_naan, opts.cache_dir, discovery, remote)
