"""Ranged GETs of signed xorb URLs in a worker thread, straight into one buffer.

The mount's trio thread serves every FUSE request; receiving megabytes of xorb data there
(httpx hands it over in 64 KiB pieces) left it little time for anything else and capped a
cold read near 150 MB/s. Here a worker thread does the whole fetch with http.client and
readinto, which releases the GIL while it waits on the socket. Each thread keeps its own
keep-alive connection per origin. Retries follow arkfs.net.retry, like every request.

Proxies are chosen as for every other request (arkfs.net.proxies: the `proxies` list, else
HTTP_PROXY, HTTPS_PROXY, NO_PROXY): an http URL is asked of the proxy in absolute form, so a
site cache such as squid can answer it; an https URL goes through a CONNECT tunnel. A proxy
that refuses or times out the connection makes the next attempt use the next of the list.

A GET ends by its deadline, however slowly the reply comes: each connect, send and receive
waits at most the time left (and at most timeout), so a server that trickles a byte now and
then cannot hold the thread, and the caller's slot of worker threads, past it.
"""

import http.client
import io
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import cast

from arkfs import __version__
from arkfs.backend.base import BadReply
from arkfs.net import proxies
from arkfs.net.client import CONNECT_TIMEOUT, one_line, origin
from arkfs.net.retry import Retry, RetryPolicy, retryable

_Origin = tuple[str, str, int | None]
_Via = tuple[_Origin, _Origin | None]  # where a connection goes: the origin, and the proxy


def proxy_for(url: urllib.parse.SplitResult) -> tuple[str | None, _Origin | None]:
    """The proxy to try first for url (arkfs.net.proxies) as a URL and as an origin, or
    None twice."""
    proxy = proxies.candidates(url.scheme, url.netloc)[0]
    parts = urllib.parse.urlsplit(proxy or "")
    if not parts.hostname:
        return None, None
    return proxy, (parts.scheme, parts.hostname, parts.port)


@dataclass(frozen=True, slots=True)
class RangedReply:
    """What a ranged GET answered: the status and, for 200 or 206, the body."""

    status: int
    body: bytes
    message: str  # the error body's first line, for messages
    content_range: str | None = None
    retry_after: str | None = None


class _Receiver(io.RawIOBase):
    """The receiving side of a socket for one reply, ending at a deadline (time.monotonic).

    Each receive waits at most idle seconds and never past the deadline. HTTPResponse
    takes it as its socket: makefile() hands it over, buffered.
    """

    def __init__(self, sock: socket.socket, deadline: float, idle: float) -> None:
        super().__init__()
        self._sock = sock
        self._io = sock.makefile("rb", buffering=0)  # keeps the socket open until closed
        self._deadline = deadline
        self._idle = idle

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(self)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the deadline passed")
        self._sock.settimeout(min(self._idle, left))
        n = self._io.readinto(buffer)
        if n is None:  # only a non-blocking socket answers None
            raise TimeoutError("the socket would block")
        return n

    def close(self) -> None:
        self._io.close()
        super().close()


class _ConnectTimeout(OSError):
    """A connect that did not complete in time."""


class RangedGetter:
    """Blocking ranged GETs for worker threads (trio.to_thread), one connection per thread.

    timeout bounds each connect, send and receive; the caller's deadline bounds the GET.
    """

    def __init__(self, timeout: float, policy: RetryPolicy) -> None:
        self.timeout = timeout
        self.policy = policy
        self._local = threading.local()

    def _connection(self, where: _Via) -> http.client.HTTPConnection:
        conns: dict[_Via, http.client.HTTPConnection] = self._local.__dict__.setdefault("conns", {})
        conn = conns.get(where)
        if conn is None:
            (scheme, host, port), proxy = where
            kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            if proxy is None:
                conn = kind(host, port)
            elif scheme == "https":  # a CONNECT tunnel through the proxy
                conn = kind(proxy[1], proxy[2] or 80)
                conn.set_tunnel(host, port)
            else:  # the proxy is asked for the absolute URL (see get)
                conn = http.client.HTTPConnection(proxy[1], proxy[2] or 80)
            conns[where] = conn
        return conn

    def _drop(self, where: _Via) -> None:
        conn = self._local.__dict__.get("conns", {}).pop(where, None)
        if conn is not None:
            conn.close()

    def get(
        self, url: str, range_header: str, deadline: float, policy: RetryPolicy | None = None
    ) -> RangedReply:
        """GET url with a Range header by deadline (time.monotonic), retrying connection
        failures, 429 and 5xx; Unreachable once the attempts or the time are spent."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadReply(f"{origin(url)}: not an http(s) URL")
        retry = Retry(policy or self.policy, time.monotonic, deadline=deadline)
        while (pause := retry.next_pause()) is not None:
            time.sleep(pause)
            proxy_url, proxy = proxy_for(parts)  # after a proxy failed, the next of the list
            where = ((parts.scheme, parts.hostname, parts.port), proxy)
            target = parts.path + (f"?{parts.query}" if parts.query else "")
            if proxy is not None and parts.scheme == "http":
                target = urllib.parse.urlunsplit(parts._replace(fragment=""))
            try:
                reply = self._once(where, target, range_header, retry)
            except _ConnectTimeout:
                self._drop(where)
                proxies.failed(proxy_url)
                retry.connect_timed_out()
                continue
            except (OSError, http.client.HTTPException) as exc:
                self._drop(where)
                if isinstance(exc, ConnectionRefusedError):
                    proxies.failed(proxy_url)
                retry.transport_failed(one_line(str(exc)) or type(exc).__name__)
                continue
            if not retryable(reply.status):
                return reply
            retry.status_failed(reply.status, reply.message, reply.retry_after)
        raise retry.unreachable(origin(url))

    def _once(self, where: _Via, target: str, range_header: str, retry: Retry) -> RangedReply:
        conn, deadline = self._connection(where), retry.deadline
        wait = min(self.timeout, deadline - time.monotonic())
        if wait <= 0:
            raise TimeoutError("the deadline passed")
        if conn.sock is None:
            conn.timeout = min(wait, retry.policy.connect_timeout or CONNECT_TIMEOUT)
            try:
                conn.connect()
            except TimeoutError:
                raise _ConnectTimeout from None
        conn.sock.settimeout(wait)
        # http.client calls response_class(sock, ...) as it would the class itself.
        conn.response_class = lambda sock, *args, **kwargs: http.client.HTTPResponse(  # type: ignore[assignment]
            cast(socket.socket, _Receiver(sock, deadline, self.timeout)), *args, **kwargs
        )
        conn.request(
            "GET", target, headers={"Range": range_header, "User-Agent": f"arkfs/{__version__}"}
        )
        with conn.getresponse() as resp:
            return self._reply(where, resp)

    def _reply(self, where: _Via, resp: http.client.HTTPResponse) -> RangedReply:
        """Receive the reply's body: all of it, straight into the bytes returned for 200 or 206."""
        content_range, retry_after = resp.getheader("Content-Range"), resp.getheader("Retry-After")
        length = resp.getheader("Content-Length")
        if resp.status not in (200, 206) or length is None or not length.isdigit():
            body = resp.read()
            if resp.will_close:
                self._drop(where)
            text = one_line(body.decode("utf-8", "replace")) or f"HTTP {resp.status}"
            return RangedReply(resp.status, body, text, content_range, retry_after)
        # BufferedReader.read(n) receives straight into the bytes it returns: no copy.
        body = resp.read(int(length))
        if len(body) < int(length):
            raise http.client.IncompleteRead(body, int(length) - len(body))
        if resp.will_close:
            self._drop(where)
        return RangedReply(resp.status, body, "", content_range)
