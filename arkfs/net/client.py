"""HTTP plumbing of the remote backend: one pooled httpx client, and retries with backoff.

Connection errors, timeouts, 429 and 5xx are retried as arkfs.net.retry decides, and
every request ends by its policy's deadline, so a dead or stuck server fails with
Unreachable in bounded time (the mount turns that into EIO). Every other reply goes back to
the caller, which maps its status. Messages name origins, never URLs: fetch URLs carry
signatures, and no header (so no token) ever reaches a message.
"""

import functools
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import msgpack
import trio

from arkfs import __version__
from arkfs.backend.base import BadReply, Refused, Unauthorized
from arkfs.net import proxies
from arkfs.net.retry import INSUFFICIENT_STORAGE, Retry, RetryPolicy, retryable
from arkfs.util.sizes import human

CONNECT_TIMEOUT = 3.0  # a second lost SYN is resent after 3 s
MAX_MESSAGE = 200
MAX_ERROR_BODY = 64 * 1024  # bytes of an error reply read for its message

# httpx logs every request line at INFO, and fetch URLs are signed: keep them out of logs.
logging.getLogger("httpx").setLevel(logging.WARNING)


class TooLarge(BadReply):
    """A reply's body is longer than its caller allows."""


class Pieces:
    """A request body sent piece by piece, never joined into one bytes object (a
    1,000,000-file manifest's bind body is ~100 MB: joined, it was a second copy at the
    publish's peak); a retry sends it again from its first piece."""

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.size = sum(map(len, pieces))

    def joined(self) -> bytes:
        return b"".join(self.pieces)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            yield piece


Body = bytes | Pieces


def make_client(timeout: float) -> httpx.AsyncClient:
    """One client for all requests: HTTP/1.1 keep-alive, room for ~16 parallel fetches.

    timeout bounds each connect, read, write and pool wait (httpx times each operation, so
    a long transfer that keeps moving is not cut off); connects give up after 3 s at most.
    """
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=16, keepalive_expiry=30)
    via: dict[str, Any] = {}
    if proxies.chain() is not None:  # the `proxies` list, over the environment's proxies
        transport = proxies.FailoverTransport(limits=limits)
        via = {"transport": transport, "mounts": {"http://": transport, "https://": transport}}
    return httpx.AsyncClient(
        timeout=httpx.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT)),
        limits=limits,
        follow_redirects=True,
        headers={"User-Agent": f"arkfs/{__version__}"},
        **via,
    )


def origin(url: str) -> str:
    """scheme://host[:port] of a URL: what messages name instead of the URL itself, and
    what tokens are kept to (compared exactly: an IPv6 host keeps its brackets, RFC 3986
    IP-literal, so [2001:db8::5]:8443 and [2001:db8::5:8443] differ).

    Parsed once per scheme and authority: a read asks it of every request's URL, and
    httpx's parse was 5% of a many-file get's Python. The URL up to the first '/' after
    `://` holds the whole authority (RFC 3986: it ends at '/', '?' or '#'), so it gives
    the same origin, and the signed URLs of one server share it."""
    start = url.find("://")
    cut = url.find("/", start + 3) if start >= 0 else -1
    return _origin(url if cut < 0 else url[:cut])


@functools.lru_cache(maxsize=256)
def _origin(url: str) -> str:
    try:
        u = httpx.URL(url)
    except httpx.InvalidURL:
        return "an invalid URL"
    host = f"[{u.host.lower()}]" if ":" in u.host else u.host
    port = f":{u.port}" if u.port is not None else ""
    return f"{u.scheme}://{host}{port}"


def one_line(text: str) -> str:
    """The first line of text, shortened to fit in an error message."""
    line = text.strip().split("\n", 1)[0].strip()
    return line if len(line) <= MAX_MESSAGE else line[: MAX_MESSAGE - 3] + "..."


def server_message(resp: httpx.Response) -> str:
    """The reason an error reply gives: its JSON "error" member, else its text or status."""
    try:
        obj = resp.json()
    except ValueError:
        obj = None
    if isinstance(obj, dict) and isinstance(obj.get("error"), str):
        return one_line(obj["error"])
    return one_line(resp.text) or f"HTTP {resp.status_code} {resp.reason_phrase}"


def raise_for_status(resp: httpx.Response, what: str) -> None:
    """Raise the BackendError a non-2xx reply means (after the caller handled its own cases)."""
    status = resp.status_code
    if 200 <= status < 300:
        return
    where, msg = origin(str(resp.request.url)), server_message(resp)
    if status == 401:
        raise Unauthorized(
            f"{what}: {where} refused the token ({msg}); pass a valid --token or set ARKFS_TOKEN"
        )
    if status == 403:
        raise Unauthorized(f"{what}: {where} refused access ({msg}); use a token with that scope")
    if status == INSUFFICIENT_STORAGE:
        raise Refused(f"{what}: the server's store is full ({where}); its operator must free space")
    raise Refused(f"{what}: {where} answered HTTP {status}: {msg}")


def json_reply(resp: httpx.Response, what: str) -> dict[str, Any]:
    """The JSON object a reply holds; BadReply if it holds something else."""
    try:
        obj = json.loads(resp.content)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadReply(
            f"{what}: {origin(str(resp.request.url))} sent malformed JSON ({one_line(str(exc))})"
        ) from None
    return _an_object(resp, what, obj, "JSON")


def msgpack_reply(resp: httpx.Response, what: str) -> dict[str, Any]:
    """The msgpack map a reply holds, str keys and values decoded, bin values as bytes;
    BadReply if it holds something else."""
    try:
        obj = msgpack.unpackb(resp.content, raw=False)
    except (ValueError, msgpack.UnpackException) as exc:  # UnicodeDecodeError, ExtraData too
        raise BadReply(
            f"{what}: {origin(str(resp.request.url))} sent malformed msgpack ({one_line(str(exc))})"
        ) from None
    return _an_object(resp, what, obj, "msgpack")


def _an_object(resp: httpx.Response, what: str, obj: object, form: str) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise BadReply(
            f"{what}: {origin(str(resp.request.url))} sent {form} {type(obj).__name__}, "
            "not an object"
        )
    return obj


def media_type(resp: httpx.Response) -> str:
    """A reply's Content-Type without its parameters, in lower case."""
    kind: str = resp.headers.get("content-type", "")
    return kind.partition(";")[0].strip().lower()


def _transport_reason(exc: httpx.TransportError) -> str:
    if isinstance(exc, httpx.TimeoutException):
        return f"no answer in time ({type(exc).__name__})"
    return one_line(str(exc)) or type(exc).__name__


async def _attempt(
    client: httpx.AsyncClient, request: httpx.Request, retry: Retry, *, stream: bool
) -> httpx.Response | None:
    """One try of request, cut at the retry's deadline: its reply, or None once retry
    knows why there was none. With stream, only the headers are waited for."""
    with trio.move_on_at(retry.deadline):
        try:
            return await client.send(request, stream=stream)
        except (
            httpx.InvalidURL,
            httpx.UnsupportedProtocol,
            httpx.TooManyRedirects,
            httpx.DecodingError,
        ) as exc:  # retrying cannot help
            raise BadReply(
                f"{origin(str(request.url))}: {one_line(str(exc)) or type(exc).__name__}"
            ) from None
        except httpx.ConnectTimeout:
            retry.connect_timed_out()
            return None
        except httpx.TransportError as exc:
            retry.transport_failed(_transport_reason(exc))
            return None
    retry.timed_out()
    return None


def _request(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    headers: dict[str, str] | None,
    content: Body | None,
    timeout: float | None,
    connect: float | None = None,
) -> httpx.Request:
    times: httpx.Timeout | None = None if timeout is None else httpx.Timeout(timeout)
    if connect is not None:  # a policy's shorter connect (a probe)
        base = times or client.timeout
        times = httpx.Timeout(connect=connect, read=base.read, write=base.write, pool=base.pool)
    if isinstance(content, Pieces):  # its length, sent as such (not chunked)
        headers = {**(headers or {}), "Content-Length": str(content.size)}
    return client.build_request(
        method,
        url,
        headers=headers,
        content=content,
        timeout=httpx.USE_CLIENT_DEFAULT if times is None else times,
    )


async def _next_reply(
    client: httpx.AsyncClient, request: httpx.Request, retry: Retry, *, stream: bool
) -> httpx.Response | None:
    """The next reply to request, after retry's pause (transport failures are retried
    here); None once the attempts or the time are spent. send() and stream() loop on it."""
    while (pause := retry.next_pause()) is not None:
        await trio.sleep(pause)
        resp = await _attempt(client, request, retry, stream=stream)
        if resp is not None:
            return resp
    return None


async def send(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    policy: RetryPolicy,
    *,
    headers: dict[str, str] | None = None,
    content: Body | None = None,
    timeout: float | None = None,
) -> httpx.Response:
    """Send a request, retrying transient failures; the first reply that is not 429 or 5xx,
    with its body read whole (use stream() where a body may be larger than wanted).
    timeout, when given, replaces the client's for this request's operations.

    Each attempt is cut at the policy's deadline (httpx times each operation, not the
    whole request). Raises Unreachable once the attempts or the time are spent.
    """
    retry = Retry(policy, trio.current_time)
    request = _request(client, method, url, headers, content, timeout, policy.connect_timeout)
    while (resp := await _next_reply(client, request, retry, stream=False)) is not None:
        if not retryable(resp.status_code):
            return resp
        retry.status_failed(resp.status_code, server_message(resp), resp.headers.get("retry-after"))
    raise retry.unreachable(origin(url))


@asynccontextmanager
async def stream(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    policy: RetryPolicy,
    *,
    headers: dict[str, str] | None = None,
    timeout: float | None = None,
) -> AsyncIterator[httpx.Response]:
    """send()'s rule, but the reply is yielded before its body is read: the caller reads
    as much as it needs (read_body, aiter_bytes), and the connection is closed (dropped,
    if body is left) on exit. Only the wait for the headers is cut at the policy's
    deadline; the body's reads are bounded by the client's per-operation timeout.
    """
    retry = Retry(policy, trio.current_time)
    request = _request(client, method, url, headers, None, timeout, policy.connect_timeout)
    while (resp := await _next_reply(client, request, retry, stream=True)) is not None:
        try:
            if not retryable(resp.status_code):
                yield resp
                return
            await read_body(resp, MAX_ERROR_BODY, "an error reply", cut=True)
            message = server_message(resp)
        finally:
            await resp.aclose()
        retry.status_failed(resp.status_code, message, resp.headers.get("retry-after"))
    raise retry.unreachable(origin(url))


async def read_body(resp: httpx.Response, limit: int, what: str, *, cut: bool = False) -> bytes:
    """The body of a streamed reply (decoded), at most limit bytes of it; also kept as
    resp.content. Past limit: TooLarge, or with cut, the first limit bytes. Reading stops
    there, so a huge or endless body costs at most limit bytes of memory."""
    body = bytearray()
    async for piece in resp.aiter_bytes():
        body += piece
        if len(body) > limit:
            if not cut:
                raise TooLarge(
                    f"{what}: {origin(str(resp.request.url))} sent more than {human(limit)}"
                )
            del body[limit:]
            break
    resp._content = bytes(body)  # what aread() sets: .content, .text and .json() then work
    return resp._content
