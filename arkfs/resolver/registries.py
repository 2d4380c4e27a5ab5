"""NAAN registries from files and URLs, with a disk copy of each URL's that is fetched again
once a day (REFRESH) and keeps serving when the registry cannot be reached.

A file is read as it is (re-read when its mtime changes). A URL is fetched with the
retry rule of arkfs.net.retry; its copy is written to CACHE_DIR/registries/ and is
used instead of the network while it is younger than REFRESH, and after that whenever a
fetch fails (one log line). Registries are asked in the order given: the first that has
a record for an ARK (its shoulder's or its NAAN's) decides.

A registry is parsed once per fetch (or file change), never per lookup, and at most
MAX_REGISTRY bytes of it are read; one that cannot be used is remembered as such for
RETRY_AFTER, so lookups meanwhile neither fetch nor parse it again.
"""

import hashlib
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import trio

from arkfs.ark.identifier import Ark
from arkfs.ark.registry import Registry, RegistryError, RegistryRecord, parse_registry
from arkfs.backend.base import BackendError
from arkfs.net.bearer import OriginTokens
from arkfs.net.client import origin, raise_for_status, read_body, stream
from arkfs.net.retry import RetryPolicy
from arkfs.util.atomic import write_atomic
from arkfs.util.urls import without_secrets

log = logging.getLogger(__name__)

REFRESH = 24 * 3600.0  # seconds a fetched registry is used before it is fetched again
RETRY_AFTER = 60.0  # seconds before a registry that could not be read is tried again
FETCH_POLICY = RetryPolicy(attempts=3, deadline=15.0)  # within the resolution deadline
MAX_REGISTRY = 512 * 1024 * 1024  # bytes; the public registry is about 1 MiB


class RegistryUnavailable(BackendError):
    """A registry that cannot be read or fetched, and has no usable copy on disk."""


def is_url(source: str) -> bool:
    """Whether a registry source is an http(s) URL (else a file path)."""
    return source.startswith(("http://", "https://"))


@dataclass
class _Loaded:
    registry: Registry
    stamp: float  # a file's mtime; for a URL, when its copy was fetched


class Registries:
    """Registry sources (paths or URLs), loaded when first needed and kept fresh."""

    def __init__(
        self,
        sources: list[str],
        cache_dir: Path,
        client: httpx.AsyncClient,
        tokens: OriginTokens | None = None,
    ) -> None:
        self.sources = list(dict.fromkeys(sources))
        self._dir = cache_dir / "registries"
        self._client = client
        self._tokens = tokens or OriginTokens()
        self._loaded: dict[str, _Loaded] = {}
        self._failed: dict[str, tuple[float, RegistryUnavailable]] = {}  # until, why
        self._lock = trio.Lock()

    def copy_path(self, url: str) -> Path:
        """Where the disk copy of a registry URL lives."""
        return self._dir / f"{hashlib.sha256(url.encode()).hexdigest()[:32]}.registry"

    async def find(self, ark: Ark) -> tuple[str, RegistryRecord] | None:
        """The first source with a record for ark, and that record. A source that cannot be
        read is skipped (get logged why); RegistryUnavailable if none can be."""
        unavailable: list[RegistryUnavailable] = []
        for source in self.sources:
            try:
                registry = await self.get(source)
            except RegistryUnavailable as exc:
                unavailable.append(exc)
                continue
            record = registry.find(ark)
            if record is not None:
                return source, record
        if unavailable and len(unavailable) == len(self.sources):
            raise unavailable[0]
        return None

    async def get(self, source: str) -> Registry:
        """One source's registry, loaded or refreshed as needed.

        Raises RegistryUnavailable when it cannot be read and has no copy on disk; that is
        remembered for RETRY_AFTER, so lookups do not each wait on a dead registry.
        """
        async with self._lock:
            failed = self._failed.get(source)
            if failed is not None and failed[0] > time.monotonic():
                raise failed[1]
            try:
                if is_url(source):
                    return await self._from_url(source)
                return await self._from_file(source)
            except RegistryError as exc:
                error = RegistryUnavailable(str(exc))
            except RegistryUnavailable as exc:
                error = exc
            if len(self.sources) > 1:  # others may answer; a lone one's error is the caller's
                log.error("skipping a NAAN registry for %.0f s: %s", RETRY_AFTER, error)
            self._failed[source] = (time.monotonic() + RETRY_AFTER, error)
            raise error

    async def _from_file(self, source: str) -> Registry:
        path = Path(source)
        try:
            mtime = (await trio.to_thread.run_sync(path.stat)).st_mtime
        except OSError as exc:
            raise RegistryUnavailable(
                f"cannot read the NAAN registry {path}: {exc.strerror}"
            ) from None
        loaded = self._loaded.get(source)
        if loaded is None or loaded.stamp != mtime:
            registry = await trio.to_thread.run_sync(load_file, path)
            loaded = self._loaded[source] = _Loaded(registry, mtime)
        return loaded.registry

    async def _from_url(self, url: str) -> Registry:
        loaded = self._loaded.get(url)
        now = time.time()
        if loaded is not None and now - loaded.stamp < REFRESH:
            return loaded.registry
        copy = self.copy_path(url)
        if loaded is None:  # a fresh copy on disk spares the network
            try:
                stamp = (await trio.to_thread.run_sync(copy.stat)).st_mtime
            except OSError:
                stamp = None
            if stamp is not None and now - stamp < REFRESH:
                registry = await self._parse_copy(url, copy)
                if registry is not None:
                    self._loaded[url] = _Loaded(registry, stamp)
                    return registry
        try:
            text = await self._fetch(url)
            registry = await _parse(text, origin(url) + " (registry)")
        except (BackendError, RegistryError) as exc:
            stale = loaded.registry if loaded is not None else await self._parse_copy(url, copy)
            if stale is None:
                raise RegistryUnavailable(
                    f"cannot fetch the NAAN registry {without_secrets(url)} and there is no "
                    f"copy of it: {exc}"
                ) from None
            log.warning(
                "using the cached copy of the NAAN registry %s: %s", without_secrets(url), exc
            )
            self._loaded[url] = _Loaded(stale, now)  # asked again after REFRESH, not sooner
            return stale
        try:
            await trio.to_thread.run_sync(self._write_copy, copy, text)
        except OSError as exc:
            log.error("cannot keep a copy of the NAAN registry %s: %s", without_secrets(url), exc)
        self._loaded[url] = _Loaded(registry, now)
        return registry

    async def _fetch(self, url: str) -> bytes:
        headers = self._tokens.headers_for(url)
        async with stream(self._client, "GET", url, FETCH_POLICY, headers=headers) as resp:
            if not 200 <= resp.status_code < 300:
                await read_body(resp, 64 * 1024, "NAAN registry", cut=True)
                raise_for_status(resp, "NAAN registry")
            return await read_body(resp, MAX_REGISTRY, "NAAN registry")

    async def _parse_copy(self, url: str, copy: Path) -> Registry | None:
        """The disk copy of url's registry, or None if there is none or it is unusable."""
        try:
            return await trio.to_thread.run_sync(load_file, copy)
        except (RegistryUnavailable, RegistryError) as exc:
            if copy.exists():
                log.error(
                    "ignoring the copy of the NAAN registry %s: %s", without_secrets(url), exc
                )
            return None

    def _write_copy(self, copy: Path, text: bytes) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        write_atomic(copy, text, durable=False)


def load_file(path: Path) -> Registry:
    """The registry in a file. Raises RegistryUnavailable or RegistryError."""
    try:
        with path.open("rb") as file:
            text = file.read(MAX_REGISTRY + 1)
    except OSError as exc:
        raise RegistryUnavailable(f"cannot read the NAAN registry {path}: {exc.strerror}") from None
    if len(text) > MAX_REGISTRY:
        raise RegistryError(f"{path} is larger than {MAX_REGISTRY >> 20} MiB: no NAAN registry")
    return parse_registry(text, str(path))


async def _parse(text: bytes, source: str) -> Registry:
    return await trio.to_thread.run_sync(parse_registry, text, source)
