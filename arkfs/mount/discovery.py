"""The backends the mount finds by itself: an ARK no configured backend binds is resolved
through the NAAN registries and the fallback (arkfs.resolve) to the ARK service of its
responder, which is then asked as a RemoteBackend, with that origin's token only.

Where an ARK resolved is remembered for RESOLVED_TIME, so lookups do not walk the chain
each time; backends are shared by service URL, so one server serves many ARKs.
"""

import logging
import time

from arkfs.ark.errors import ArkError
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend, NotBound
from arkfs.backend.remote import RemoteBackend
from arkfs.resolve.discover import Resolver
from arkfs.resolve.tokens import OriginTokens

log = logging.getLogger(__name__)

RESOLVED_TIME = 300.0  # seconds where an ARK resolved is taken as known


def archive_ark(key: str) -> str:
    """The archive a catalog key belongs to: ark:NAAN/Name of ark:NAAN/Name[/@vN...]."""
    return "/".join(key.split("/", 2)[:2])


class DiscoveredBackends:
    """ARK -> the RemoteBackend of the ARK service it resolves to."""

    def __init__(self, resolver: Resolver, tokens: OriginTokens) -> None:
        self.resolver = resolver
        self._tokens = tokens
        self._backends: dict[str, Backend] = {}
        self._resolved: dict[str, tuple[float, str]] = {}  # archive ARK -> (until, service)

    @property
    def backends(self) -> list[Backend]:
        """Every backend found so far."""
        return list(self._backends.values())

    def named(self, service: str) -> Backend:
        """The backend of a service URL (made once; with its origin's token only)."""
        service = service.rstrip("/")
        if service not in self._backends:
            self._backends[service] = RemoteBackend(service, self._tokens.token_for(service))
        return self._backends[service]

    async def backend_for(self, key: str) -> Backend:
        """The backend serving the archive of key. Raises NotBound when the chain ends
        somewhere that is not an ARK service, or the resolver's errors."""
        ark = archive_ark(key)
        known = self._resolved.get(ark)
        if known is not None and known[0] > time.monotonic():
            return self.named(known[1])
        try:
            parsed = parse(ark)
        except ArkError as exc:
            raise NotBound(f"{ark} is not an ARK: {exc}") from None
        trace = await self.resolver.resolve(parsed)
        service = trace.service
        if service is None:
            raise NotBound(f"{ark} resolves to {trace.responder}, which is no ARK service")
        log.info(
            "%s resolves to %s (%s, %d hops)",
            ark,
            service,
            trace.record or trace.via,
            len(trace.hops),
        )
        self._resolved[ark] = (time.monotonic() + RESOLVED_TIME, service)
        return self.named(service)

    async def aclose(self) -> None:
        """Close the resolver (the catalog closes the backends)."""
        await self.resolver.aclose()
