"""Where the public reaches this server: its base URL behind a proxy.

Every absolute URL the server writes (pages, citations, Link headers, JSON-LD, manifests'
cas_url and token_url, reconstruction fetch URLs, token replies, `/.well-known/ark`) comes
from the request's scheme, Host and ASGI root_path. This middleware sets those three once,
before any route runs:

- `serve --base-url https://ark.example.org/prefix`: always that scheme, host and prefix;
- else, for a request from a trusted proxy (`--forwarded-allow-ips`): its
  `X-Forwarded-Proto`, `X-Forwarded-Host` and `X-Forwarded-Prefix` headers;
- else the request as it arrived.

A trusted proxy's `X-Forwarded-For` also names the client (the access log's host): the
address nearest this server that is not itself a trusted proxy, as nginx's realip module
takes it with `real_ip_recursive on`.

A prefix becomes the ASGI root_path and is put before the path, as the ASGI spec has it,
so the proxy must strip it (`proxy_pass http://127.0.0.1:8080/;`, as X-Forwarded-Prefix
means): a path that still held it would be ambiguous (prefix `/arks`, route `/arks`).
"""

import ipaddress
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

_HOST = re.compile(r"^[A-Za-z0-9.\-]+(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]+\](:[0-9]{1,5})?$")
_PREFIX = re.compile(r"^(/[A-Za-z0-9._~\-]+)*$")

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class PublicUrlError(ValueError):
    """A --base-url or --forwarded-allow-ips that cannot be used; the message says why."""


@dataclass(frozen=True)
class Public:
    """The public scheme, host and prefix ('' or '/a/b'), as one fixed base URL."""

    scheme: str
    host: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> "Public":
        """`https://host[:port][/prefix]`; PublicUrlError unless it is such a URL."""
        parts = urlsplit(url)
        prefix = parts.path.rstrip("/")
        if (
            parts.scheme not in ("http", "https")
            or not _HOST.match(parts.netloc)
            or not _PREFIX.match(prefix)
            or parts.query
            or parts.fragment
        ):
            raise PublicUrlError(
                f"--base-url {url!r} is not an http(s)://HOST[:PORT][/PREFIX] URL "
                "(no query, no user, a plain path)"
            )
        return cls(parts.scheme, parts.netloc, prefix)


def parse_trusted(text: str) -> tuple[Network, ...] | None:
    """--forwarded-allow-ips: comma-separated addresses or networks, or '*' (None: any)."""
    if text.strip() == "*":
        return None
    try:
        return tuple(ipaddress.ip_network(p.strip()) for p in text.split(",") if p.strip())
    except ValueError as exc:
        raise PublicUrlError(f"--forwarded-allow-ips: {exc}") from None


class PublicUrls:
    """ASGI middleware: the request's scheme, Host and root_path as the public sees them."""

    def __init__(
        self, app: ASGIApp, base: Public | None, trusted: tuple[Network, ...] | None = ()
    ) -> None:
        self.app, self.base, self.trusted = app, base, trusted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            public = self.base or self._forwarded(scope)
            if public is not None:
                _apply(scope, public)
            client = self._forwarded_for(scope)
            if client is not None:
                scope["client"] = (client, 0)
        await self.app(scope, receive, send)

    def _forwarded_for(self, scope: Scope) -> str | None:
        """The client a trusted proxy's X-Forwarded-For names: walking back from this server,
        the first address not trusted (else the farthest); None if untrusted or unsaid."""
        if self.trusted == () or not self._trusts(scope.get("client")):
            return None
        hops: list[str] = []
        for key, value in scope["headers"]:
            if key.lower() == b"x-forwarded-for":
                hops += [h.strip() for h in value.decode("latin-1").split(",")]
        client = None
        for hop in reversed(hops):
            try:
                client = str(ipaddress.ip_address(hop))
            except ValueError:
                return client  # a name or garbage: trust nothing farther
            if not self._trusts((client, 0)):
                return client
        return client

    def _forwarded(self, scope: Scope) -> Public | None:
        """What a trusted proxy's X-Forwarded-* headers say; None if untrusted or unsaid."""
        if self.trusted == () or not self._trusts(scope.get("client")):
            return None
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        proto = headers.get("x-forwarded-proto", "").split(",")[0].strip().lower()
        host = headers.get("x-forwarded-host", "").split(",")[0].strip()
        prefix = headers.get("x-forwarded-prefix", "").split(",")[0].strip().rstrip("/")
        if not (proto or host or prefix):
            return None
        scheme = proto if proto in ("http", "https") else scope["scheme"]
        if not _HOST.match(host):
            host = headers.get("host", "")
        return Public(scheme, host, prefix if _PREFIX.match(prefix) else "")

    def _trusts(self, client: tuple[str, int] | None) -> bool:
        if self.trusted is None:
            return True
        if not client:
            return False
        try:
            address = ipaddress.ip_address(client[0])
        except ValueError:
            return False
        return any(address in network for network in self.trusted)


def _apply(scope: Scope, public: Public) -> None:
    """Make scope look as if the public URL had been asked for."""
    scope["scheme"] = public.scheme
    if public.host:
        headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"host"]
        scope["headers"] = [(b"host", public.host.encode("latin-1")), *headers]
    if public.prefix:
        raw = scope.get("raw_path") or scope["path"].encode()
        scope["root_path"] = public.prefix
        scope["path"] = public.prefix + scope["path"]
        scope["raw_path"] = public.prefix.encode() + raw


def route_raw_path(scope: Scope) -> str:
    """The raw (still %-escaped) request path below the public prefix, as ASCII text;
    UnicodeDecodeError when it holds raw non-ASCII bytes."""
    raw: str = (scope.get("raw_path") or scope["path"].encode()).decode("ascii")
    root: str = scope.get("root_path", "")
    return raw[len(root) :] if root and raw.startswith(root) else raw
