"""Ranged GETs of signed xorb URLs in a worker thread, straight into one buffer.

The mount's trio thread serves every FUSE request; receiving megabytes of xorb data there
(httpx hands it over in 64 KiB pieces) left it little time for anything else and capped a
cold read near 150 MB/s. Here a worker thread does the whole fetch with http.client and
readinto, which releases the GIL while it waits on the socket. Each thread keeps its own
keep-alive connection per origin. Retries follow arkfs.backend.retry, like every request.
"""

import http.client
import threading
import time
import urllib.parse
from dataclasses import dataclass

from arkfs import __version__
from arkfs.backend.base import BadReply
from arkfs.backend.http import one_line, origin
from arkfs.backend.retry import Retry, RetryPolicy, retryable

_Origin = tuple[str, str, int | None]


@dataclass(frozen=True, slots=True)
class RangedReply:
    """What a ranged GET answered: the status and, for 200 or 206, the body."""

    status: int
    body: bytes
    message: str  # the error body's first line, for messages
    content_range: str | None = None
    retry_after: str | None = None


class RangedGetter:
    """Blocking ranged GETs for worker threads (trio.to_thread), one connection per thread."""

    def __init__(self, timeout: float, policy: RetryPolicy) -> None:
        self.timeout = timeout
        self.policy = policy
        self._local = threading.local()

    def _connection(self, where: _Origin) -> http.client.HTTPConnection:
        conns: dict[_Origin, http.client.HTTPConnection] = self._local.__dict__.setdefault(
            "conns", {}
        )
        conn = conns.get(where)
        if conn is None:
            scheme, host, port = where
            kind = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            conn = conns[where] = kind(host, port, timeout=self.timeout)
        return conn

    def _drop(self, where: _Origin) -> None:
        conn = self._local.__dict__.get("conns", {}).pop(where, None)
        if conn is not None:
            conn.close()

    def get(self, url: str, range_header: str) -> RangedReply:
        """GET url with a Range header, retrying connection failures, 429 and 5xx."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise BadReply(f"{origin(url)}: not an http(s) URL")
        where = (parts.scheme, parts.hostname, parts.port)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        retry = Retry(self.policy, time.monotonic)
        while (pause := retry.next_pause()) is not None:
            time.sleep(pause)
            try:
                reply = self._once(where, target, range_header)
            except (OSError, http.client.HTTPException) as exc:
                self._drop(where)
                retry.transport_failed(one_line(str(exc)) or type(exc).__name__)
                continue
            if not retryable(reply.status):
                return reply
            retry.status_failed(reply.status, reply.message, reply.retry_after)
        raise retry.unreachable(origin(url))

    def _once(self, where: _Origin, target: str, range_header: str) -> RangedReply:
        conn = self._connection(where)
        conn.request(
            "GET", target, headers={"Range": range_header, "User-Agent": f"arkfs/{__version__}"}
        )
        resp = conn.getresponse()
        length = resp.getheader("Content-Length")
        if resp.status not in (200, 206) or length is None or not length.isdigit():
            body = resp.read()
            if resp.will_close:
                self._drop(where)
            text = one_line(body.decode("utf-8", "replace")) or f"HTTP {resp.status}"
            return RangedReply(
                resp.status,
                body,
                text,
                resp.getheader("Content-Range"),
                resp.getheader("Retry-After"),
            )
        buf = bytearray(int(length))
        view = memoryview(buf)
        got = 0
        while got < len(buf):
            n = resp.readinto(view[got:])
            if not n:
                raise http.client.IncompleteRead(bytes(view[:got]), len(buf) - got)
            got += n
        if resp.will_close:
            self._drop(where)
        return RangedReply(resp.status, bytes(buf), "", resp.getheader("Content-Range"))
