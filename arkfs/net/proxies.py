"""Which proxy each request goes through, for every client in arkfs.net.

A list of proxies (the config key `proxies`, else $ARKFS_PROXIES, separated by `;`) is tried
in order and fails over, as CVMFS_HTTP_PROXY does: a proxy that cannot be connected to is
passed over for RESET_AFTER seconds, and `DIRECT` in the list means no proxy. Without a
list, the environment decides (HTTP_PROXY, HTTPS_PROXY, NO_PROXY, as urllib and httpx read
them). NO_PROXY applies to the list too.
"""

import os
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from typing import Any

import httpx

PROXIES_ENV = "ARKFS_PROXIES"
DIRECT = "DIRECT"
RESET_AFTER = 300.0  # seconds a failed proxy is passed over (CVMFS_PROXY_RESET_AFTER)


class ProxyError(ValueError):
    """A proxy setting that is not a list of http:// proxy URLs and DIRECT."""


def parse(proxies: Sequence[str], where: str) -> tuple[str | None, ...]:
    """The proxies of a setting in order, None for DIRECT; ProxyError naming where if one
    is not an http:// URL with a host."""
    chain: list[str | None] = []
    for proxy in proxies:
        if proxy.strip().upper() == DIRECT:
            chain.append(None)
            continue
        parts = urllib.parse.urlsplit(proxy.strip())
        if parts.scheme != "http" or not parts.hostname or parts.path not in ("", "/"):
            raise ProxyError(f"{where}: {proxy!r} is not DIRECT or a proxy URL http://HOST:PORT")
        chain.append(f"http://{parts.netloc}")
    if not chain:
        raise ProxyError(f"{where}: the list of proxies is empty")
    return tuple(chain)


class ProxyChain:
    """Proxies tried in order (None: DIRECT), each failed one passed over for a while;
    safe to share between threads."""

    def __init__(
        self, proxies: tuple[str | None, ...], clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.proxies = proxies
        self._clock = clock
        self._failed: dict[str | None, float] = {}
        self._lock = threading.Lock()

    def order(self) -> list[str | None]:
        """Every proxy, those not failed lately first, each group in the configured order."""
        now = self._clock()
        with self._lock:
            fresh = [
                p
                for p in self.proxies
                if now >= self._failed.get(p, now - RESET_AFTER) + RESET_AFTER
            ]
        return fresh + [p for p in self.proxies if p not in fresh]

    def failed(self, proxy: str | None) -> None:
        """proxy could not be connected to: pass it over for RESET_AFTER seconds."""
        with self._lock:
            self._failed[proxy] = self._clock()


_configured: ProxyChain | None = None


def use(proxies: Sequence[str], where: str) -> None:
    """Send every request through proxies (a config's `proxies`) from now on."""
    global _configured
    _configured = ProxyChain(parse(proxies, where))


def chain() -> ProxyChain | None:
    """The configured proxies, else those of $ARKFS_PROXIES, else None (the environment's
    HTTP_PROXY and its kin decide)."""
    global _configured
    if _configured is None and os.environ.get(PROXIES_ENV):
        _configured = ProxyChain(parse(os.environ[PROXIES_ENV].split(";"), PROXIES_ENV))
    return _configured


def candidates(scheme: str, host_port: str) -> list[str | None]:
    """The proxies to try for a URL of scheme at host[:port], in order (None: directly)."""
    if urllib.request.proxy_bypass(host_port):  # NO_PROXY
        return [None]
    configured = chain()
    if configured is not None:
        return configured.order()
    proxy = urllib.request.getproxies_environment().get(scheme)
    return [None if not proxy else proxy if "://" in proxy else f"http://{proxy}"]


def failed(proxy: str | None) -> None:
    """A connection to proxy (None: directly) failed: try the next of the list first."""
    configured = chain()
    if configured is not None:
        configured.failed(proxy)


class FailoverTransport(httpx.AsyncBaseTransport):
    """httpx's transport through the configured proxies: a request whose proxy cannot be
    connected to is sent through the next at once."""

    def __init__(self, **options: Any) -> None:
        """options are httpx.AsyncHTTPTransport's (limits, ...), for each proxy's."""
        self._options = options
        self._transports: dict[str | None, httpx.AsyncHTTPTransport] = {}

    def _through(self, proxy: str | None) -> httpx.AsyncHTTPTransport:
        if proxy not in self._transports:
            self._transports[proxy] = httpx.AsyncHTTPTransport(proxy=proxy, **self._options)
        return self._transports[proxy]

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        tried = candidates(url.scheme, url.netloc.decode("ascii"))
        for proxy in tried[:-1]:
            try:
                return await self._through(proxy).handle_async_request(request)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                failed(proxy)
        try:
            return await self._through(tried[-1]).handle_async_request(request)
        except (httpx.ConnectError, httpx.ConnectTimeout):
            failed(tried[-1])
            raise

    async def aclose(self) -> None:
        for transport in self._transports.values():
            await transport.aclose()
