"""Where an ARK resolves: its registry record (or the fallback resolver), the redirect
chain from there to the responder, and the responder's ARK service.

Resolver Chains and Roles: the first resolver is the record's expanded target (see
arkfs.ark.registry), or FALLBACK + the ARK for a NAAN no registry knows ("If an ARK
Resolver Service receives a request for a NAAN that it knows nothing about, best practice
is to redirect the request to N2T.net"). Each hop is one request (HEAD, or GET where HEAD
is refused), so each carries only its own origin's token (arkfs.net.bearer); 301,
302, 303, 307 and 308 are followed up to MAX_HOPS times, and a URL seen twice is a loop.
The last resolver is the responder. Finding a Resolver Service: its /.well-known/ark
gives the service path; without one, a responder URL of the form SERVICE/ark:... (the
Mapping ARK's resolver service, ARK Anatomy) names it. The whole resolution ends within
RESOLVE_DEADLINE.

A last hop that answers 4xx or 5xx is a failure (NotFoundThere for 404 and 410), never
an ARK service. Every hop the network names (a registry target, a redirect Location)
must lead to a public address unless allow_private (arkfs.resolver.destinations).

Metadata (`?info`) comes from the ARK's resolver (Trace.ark_resolver: the last hop
whose URL names the ARK, `.../ark:...`), not the object the chain ends at (a landing
page, a PDF). An inflected ARK (`ARK?info`) carries its inflection along the chain from
the first hop, as N2T passes it on (Finding a Resolver Service: n2t.net "began
delegating [metadata requests] to resolvers further along the chain"), and the chain's
last reply is the record. Either way a reply is kept
only when it is ERC/ANVL text or JSON, at most MAX_INFO bytes; anything else is "no
metadata from this resolver".
"""

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio

from arkfs.ark.anvl import read_records
from arkfs.ark.errors import ArkError
from arkfs.ark.identifier import Ark
from arkfs.ark.registry import RegistryError, RegistryRecord
from arkfs.ark.thump import ARKFS_HEADER
from arkfs.backend.base import BackendError, NotBound, Unreachable
from arkfs.net.bearer import OriginTokens
from arkfs.net.client import make_client, media_type, origin, read_body, send, stream
from arkfs.net.retry import RetryPolicy
from arkfs.resolver.destinations import Destinations
from arkfs.resolver.registries import Registries, is_url
from arkfs.util.urls import without_secrets

MAX_HOPS = 10
REDIRECTS = frozenset({301, 302, 303, 307, 308})
REQUEST_TIMEOUT = 10.0  # seconds for each connect, send and receive
RESOLVE_DEADLINE = 30.0  # seconds for the whole chain, the registry and /.well-known/ark
HOP_POLICY = RetryPolicy(attempts=3, deadline=10.0)
WELL_KNOWN_POLICY = RetryPolicy(attempts=1, deadline=5.0)
MAX_INFO = 1024 * 1024  # bytes of a ?info reply read at most; a longer one is no record
NO_METADATA = "no metadata from this resolver"
METADATA_TYPES = frozenset({"", "text/plain", "text/x-anvl", "application/json"})


class ResolveError(BackendError):
    """The chain from an ARK to its responder is broken (a loop, too many hops, a bad hop)."""


class NoResolver(ResolveError, NotBound):
    """No registry knows the ARK's NAAN and the fallback resolver is off."""


class NotFoundThere(ResolveError, NotBound):
    """The last resolver of the chain answered 404 or 410: it has no such ARK."""


@dataclass(frozen=True)
class Hop:
    """One request of the chain: its URL and the status it got."""

    url: str
    status: int

    def to_json(self) -> dict[str, Any]:
        return {"url": self.url, "status": self.status}


@dataclass
class Trace:
    """How one ARK resolved, hop by hop (what `arkfs resolve` prints)."""

    ark: str
    via: str  # "registry" or "fallback"
    source: str | None  # the registry that had the record
    record: RegistryRecord | None
    hops: list[Hop] = field(default_factory=list)
    service_path: str | None = None  # from the responder's /.well-known/ark
    arkfs: bool = False  # whether that names an arkfs resolver (ARKs are archives there)
    info: str | None = None  # the ARK resolver's ?info record (ERC/ANVL or JSON), when asked
    info_from: str | None = None  # the URL ?info was asked of (None: not asked)

    @property
    def final_url(self) -> str:
        """The URL the last hop asked: the responder's."""
        return self.hops[-1].url

    @property
    def status(self) -> int:
        return self.hops[-1].status

    @property
    def responder(self) -> str:
        return origin(self.final_url)

    @property
    def service(self) -> str | None:
        """The responder's ARK service base URL (no trailing '/'), if the final URL is an ARK
        request to one; backends append `/ark:...` to it."""
        path = httpx.URL(self.final_url).path
        if self.service_path is not None:
            if path.startswith(f"{self.service_path}ark:"):
                return self.responder + self.service_path.rstrip("/")
            return None
        at = path.find("/ark:")
        return self.responder + path[:at] if at >= 0 else None

    def to_json(self) -> dict[str, Any]:
        return {
            "ark": self.ark,
            "via": self.via,
            "registry": self.source,
            "record": self.record.to_json() if self.record else None,
            "hops": [{**h.to_json(), "url": without_secrets(h.url)} for h in self.hops],
            "responder": self.responder,
            "service_path": self.service_path,
            "service": self.service,
            "arkfs": self.arkfs,
            "info": self.info,
            "info_from": None if self.info_from is None else without_secrets(self.info_from),
        }

    def lines(self) -> list[str]:
        """The trace for people, one fact per line."""
        if self.record is not None:
            out = [
                f"{self.ark}: {self.record} in {self.source}",
                f"  target {self.record.template}",
            ]
        else:
            out = [f"{self.ark}: no registry record; the fallback resolver"]
        out += [f"  {h.status} {without_secrets(h.url)}" for h in self.hops]
        out.append(f"responder {self.responder}")
        path = "none" if self.service_path is None else self.service_path
        out.append(f"  /.well-known/ark service path: {path}")
        kind = " (arkfs: ARKs are archives)" if self.arkfs else ""
        out.append(f"  ARK service: {self.service or 'none (not an ARK resolver)'}{kind}")
        if self.info_from is not None:
            out.append(f"?info from {without_secrets(self.info_from)}:")
            text = NO_METADATA if self.info is None else self.info.rstrip("\n")
            out += [f"  {line}" for line in text.split("\n")]
        return out

    @property
    def ark_resolver(self) -> str:
        """The URL of the ARK's resolver: the last hop that asked for the ARK as an ARK
        service (`.../ark:...`, the Mapping ARK form of ARK Anatomy), else the last that
        answered as a resolver does (a redirect), else the first (the registry's target
        or the fallback)."""
        named = [h for h in self.hops if "/ark:" in httpx.URL(h.url).path.lower()]
        redirected = [h for h in self.hops if h.status in REDIRECTS]
        return (named or redirected or self.hops[:1])[-1].url


class Resolver:
    """Resolves ARKs through registries, then the fallback resolver (None: off)."""

    def __init__(
        self,
        registries: list[str],
        fallback: str | None,
        cache_dir: Path,
        tokens: OriginTokens | None = None,
        allow_private: bool = False,
    ) -> None:
        self.fallback = fallback
        self._tokens = tokens or OriginTokens()
        trusted = [*filter(is_url, registries), *([fallback] if fallback else [])]
        self.destinations = Destinations(allow_private, trusted)
        self._client = make_client(REQUEST_TIMEOUT)
        self._client.follow_redirects = False  # each hop is asked here, with its own token
        self._registry_client = make_client(REQUEST_TIMEOUT)  # follows redirects itself:
        self._registry_client.event_hooks["request"] = [self._check_registry_hop]  # each checked
        self.registries = Registries(registries, cache_dir, self._registry_client, self._tokens)

    async def _check_registry_hop(self, request: httpx.Request) -> None:
        """A registry given by URL is trusted; where it redirects is checked as a chain's hop."""
        await self.destinations.check(str(request.url), "a NAAN registry's redirect")

    async def aclose(self) -> None:
        """Close the HTTP clients."""
        await self._client.aclose()
        await self._registry_client.aclose()

    async def resolve(self, ark: Ark, *, info: bool = False) -> Trace:
        """The trace of ark's resolution (with the ARK resolver's ?info when info, or
        when ark is inflected).

        Raises NoResolver, NotFoundThere, ResolveError, PrivateDestination, Unreachable
        (a hop did not answer), or RegistryUnavailable.
        """
        with trio.move_on_after(RESOLVE_DEADLINE) as scope:
            return await self._resolve(ark, info)
        assert scope.cancelled_caught
        raise Unreachable(f"resolving {ark} took more than {RESOLVE_DEADLINE:g} s")

    async def _resolve(self, ark: Ark, info: bool) -> Trace:
        found = await self.registries.find(ark)
        if found is not None:
            source, record = found
            try:
                url = record.target(ark)
            except RegistryError as exc:
                raise ResolveError(str(exc)) from None
            trace = Trace(str(ark), "registry", source, record)
        elif self.fallback is not None:
            url = self.fallback.rstrip("/") + f"/{ark}"
            trace = Trace(str(ark), "fallback", None, None)
        else:
            raise NoResolver(
                f"no NAAN registry has a record for {ark.naan} and the fallback resolver is "
                "off: add a registry (--registry), a [naans] entry, or set fallback"
            )
        inflected = ark.inflection is not None
        if inflected and "?" not in url:  # carried along the chain, as N2T carries it
            url += ark.query
        await self._follow(trace, url)
        _check_outcome(trace)
        trace.service_path, trace.arkfs = await self._service_path(trace.final_url)
        if inflected:  # the chain's last reply is the record
            trace.info_from = trace.final_url
            trace.info = await self._metadata(trace, trace.final_url)
        elif info:
            trace.info_from = trace.ark_resolver.split("?", 1)[0] + "?info"
            trace.info = await self._metadata(trace, trace.info_from)
        return trace

    async def _request(self, method: str, url: str, policy: RetryPolicy) -> httpx.Response:
        headers = self._tokens.headers_for(url)
        return await send(self._client, method, url, policy, headers=headers)

    async def _check(self, trace: Trace, url: str, first: bool) -> None:
        """Refuse a URL of the chain that is no http(s) URL, or that leads to a private
        address (see arkfs.resolver.destinations)."""
        if not url.startswith(("http://", "https://")):
            raise ResolveError(
                f"{trace.ark}: the chain leads to {without_secrets(url)!r}, not an http(s) URL"
            )
        what = "the registry's target" if first else "a redirect"
        await self.destinations.check(url, f"{trace.ark}: {what}")

    async def _follow(self, trace: Trace, url: str) -> None:
        """Ask url, then every Location it redirects to, into trace.hops."""
        seen: set[str] = set()
        while True:
            if url in seen:
                raise ResolveError(
                    f"redirect loop at {without_secrets(url)} while resolving {trace.ark}"
                )
            await self._check(trace, url, not seen)
            seen.add(url)
            resp = await self._request("HEAD", url, HOP_POLICY)
            if resp.status_code in (405, 501):  # some resolvers answer GET only
                headers = self._tokens.headers_for(url)  # its status and headers: no body
                async with stream(self._client, "GET", url, HOP_POLICY, headers=headers) as resp:
                    pass
            trace.hops.append(Hop(url, resp.status_code))
            location = resp.headers.get("location")
            if resp.status_code not in REDIRECTS or location is None:
                return
            if len(trace.hops) > MAX_HOPS:
                raise ResolveError(
                    f"more than {MAX_HOPS} redirects while resolving {trace.ark} "
                    f"(last {origin(url)})"
                )
            url = str(httpx.URL(url).join(location))

    async def _service_path(self, url: str) -> tuple[str | None, bool]:
        """The service path /.well-known/ark announces on url's origin (None if it does
        not), and whether it is an arkfs resolver (its ARKFS_HEADER says so)."""
        try:
            resp = await self._request("GET", f"{origin(url)}/.well-known/ark", WELL_KNOWN_POLICY)
        except BackendError:
            return None, False
        if resp.status_code != 200:
            return None, False
        lines = [line.strip() for line in resp.text.splitlines()]
        arkfs = ARKFS_HEADER in resp.headers
        for line in lines:
            if line and not line.startswith("#"):
                path = (line if line.endswith("/") else line + "/") if line[0] == "/" else None
                return path, arkfs and path is not None
        return None, False

    async def _metadata(self, trace: Trace, url: str) -> str | None:
        """The metadata record at url, following its redirects (each hop checked as the
        chain's are): its reply when that is ERC/ANVL text or JSON of at most MAX_INFO
        bytes, else None."""
        seen: set[str] = set()
        try:
            while url not in seen and len(seen) <= MAX_HOPS:
                await self._check(trace, url, False)
                seen.add(url)
                headers = self._tokens.headers_for(url)
                async with stream(self._client, "GET", url, HOP_POLICY, headers=headers) as resp:
                    location = resp.headers.get("location")
                    if resp.status_code in REDIRECTS and location is not None:
                        url = str(httpx.URL(url).join(location))
                        continue
                    if resp.status_code != 200:
                        return None
                    body = await read_body(resp, MAX_INFO, "?info")
                    return metadata_text(body, media_type(resp))
        except BackendError:
            return None
        return None


def metadata_text(body: bytes, media_type: str) -> str | None:
    """body as text when it is a metadata record: JSON, or ERC/ANVL text (one or more
    `label: value` records); None for anything else (HTML, a PDF, binary)."""
    if media_type not in METADATA_TYPES and not media_type.endswith("+json"):
        return None
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.strip() or any(c < " " and c not in "\t\n\r" for c in text):
        return None
    try:
        json.loads(text)
        return text
    except ValueError:
        pass
    try:
        return text if read_records(text) else None
    except ArkError:
        return None


def _check_outcome(trace: Trace) -> None:
    """A last hop that answered 4xx or 5xx is a failure, never an ARK service."""
    status, where = trace.status, trace.responder
    if status in (404, 410):
        raise NotFoundThere(
            f"{trace.ark}: the last resolver, {where}, answered {status}: no such ARK"
        )
    if status >= 400:
        raise ResolveError(f"{trace.ark}: the last resolver, {where}, answered HTTP {status}")
