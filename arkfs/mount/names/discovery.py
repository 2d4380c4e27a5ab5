"""What the mount finds by itself: an ARK no configured backend binds is resolved through
the NAAN registries and the fallback (arkfs.resolver). When the responder is an arkfs
server (its /.well-known/ark says so), it is asked as a RemoteBackend, with that origin's
token only: the ARK is an archive, a directory. Any other responder's object is a
RemoteObject: the ARK is a read-only file holding it (arkfs.resolver.objects).

How an ARK resolved is remembered for RESOLVED_TIME, so lookups do not walk the chain
each time; backends are shared by service URL, so one server serves many ARKs.
"""

import logging
import time

from arkfs.ark.errors import ArkError
from arkfs.ark.normalization import parse
from arkfs.backend.base import Backend, NotBound
from arkfs.backend.remote import RemoteBackend
from arkfs.net.bearer import OriginTokens
from arkfs.resolver.discover import Resolver, Trace
from arkfs.resolver.objects import ObjectReader, RemoteObject
from arkfs.util.lru import LRU
from arkfs.util.urls import without_secrets

log = logging.getLogger(__name__)

RESOLVED_TIME = 300.0  # seconds where an ARK resolved is taken as known
FAILED_TIME = 10.0  # seconds an ARK no resolver knows is answered from memory
MAX_REMEMBERED = 4096  # ARKs whose resolution (or its failure) is remembered


def archive_ark(key: str) -> str:
    """The archive a catalog key belongs to: ark:NAAN/Name of ark:NAAN/Name[/@vN...]."""
    return "/".join(key.split("/", 2)[:2])


class DiscoveredBackends:
    """ARK -> the RemoteBackend of the ARK service it resolves to."""

    def __init__(self, resolver: Resolver, tokens: OriginTokens) -> None:
        self.resolver = resolver
        self._tokens = tokens
        self._backends: dict[str, Backend] = {}
        self._traces: LRU[str, tuple[float, Trace]] = LRU(MAX_REMEMBERED)  # ARK -> (until, trace)
        self._failed: LRU[str, tuple[float, NotBound]] = LRU(MAX_REMEMBERED)  # ARK -> (until, why)
        self.objects = ObjectReader(tokens)

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

    async def _trace(self, key: str) -> Trace:
        """How the archive ARK of key resolves (remembered for RESOLVED_TIME)."""
        ark = archive_ark(key)
        now = time.monotonic()
        known = self._traces.get(ark)
        if known is not None and known[0] > now:
            return known[1]
        failed = self._failed.get(ark)
        if failed is not None and failed[0] > now:
            raise failed[1]
        try:
            trace = await self.resolver.resolve(parse(ark), info=True)
        except ArkError as exc:
            raise NotBound(f"{ark} is not an ARK: {exc}") from None
        except NotBound as exc:  # no resolver: not asked again for a while
            self._failed.put(ark, (now + FAILED_TIME, exc))
            raise
        where = trace.service if trace.arkfs else trace.final_url
        log.info(
            "%s resolves to %s (%s, %d hops)",
            ark,
            without_secrets(where or trace.final_url),
            trace.record or trace.via,
            len(trace.hops),
        )
        self._traces.put(ark, (time.monotonic() + RESOLVED_TIME, trace))
        return trace

    def resolved_url(self, key: str) -> str | None:
        """The URL the chain of key's archive ended at, when it led to an arkfs server
        (as last resolved, even if that is older than RESOLVED_TIME); else None."""
        known = self._traces.peek(archive_ark(key))
        return known[1].final_url if known is not None and known[1].arkfs else None

    async def backend_for(self, key: str) -> Backend:
        """The backend serving the archive of key. Raises NotBound when the chain ends
        anywhere but at an arkfs server, or the resolver's errors."""
        trace = await self._trace(key)
        if not trace.arkfs or trace.service is None:
            raise NotBound(f"{trace.ark} resolves to {trace.responder}, which is no arkfs server")
        return self.named(trace.service)

    async def object_for(self, key: str) -> RemoteObject | None:
        """What key's ARK resolves to when that is not an arkfs archive: the object at the
        chain's end, if it answers 200; else None."""
        trace = await self._trace(key)
        if trace.arkfs or trace.status != 200 or key != trace.ark:
            return None
        return await self.objects.stat(trace.ark, trace.final_url, trace.info)

    async def aclose(self) -> None:
        """Close the resolver and the object reader (the catalog closes the backends)."""
        await self.resolver.aclose()
        await self.objects.aclose()
