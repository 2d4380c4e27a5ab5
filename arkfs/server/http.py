"""HTTP plumbing both faces of `arkfs serve` share: HttpError, path hashes, Range, bodies.

Errors raised here and by the archive service are answered by the one error mapping in
app.py, in the format of the route's face.
"""

import hashlib
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from typing import Any, BinaryIO, TypeVar

import trio
from starlette.requests import Request
from starlette.responses import Response

from arkfs.ark.identifier import Ark
from arkfs.server.auth import Authorizer
from arkfs.server.metrics import Metrics
from arkfs.service.archive_service import ArchiveService, clip_range
from arkfs.store.errors import OutOfRange
from arkfs.xet.errors import HashStringError
from arkfs.xet.hashing import string_to_hash

_RANGE = re.compile(r"bytes=([0-9]*)-([0-9]*)$")
_DIGITS = 18  # a number with more significant digits is past the end of any object
T = TypeVar("T")
SPOOL_WRITE = 1 << 20  # bytes of a spooled body written to its file at a time
IMMUTABLE = "max-age=31536000, immutable"  # content named by its hash or its version
LATEST_MAX_AGE = 60  # seconds a cache may keep what the latest version of an ARK answered


class HttpError(Exception):
    """An error reply: status, a one-line reason, any headers it needs, and the nearest
    existing ARK (a 404 inside an archive) that the browser's error page links."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        nearest: Ark | None = None,
    ) -> None:
        self.status, self.message, self.headers = status, message, headers or {}
        self.nearest = nearest
        super().__init__(message)


@dataclass
class Face:
    """What the routes of one face (CAS or resolver) share: the archive service, the token
    rules, the worker threads that run blocking service calls, and the server's metrics."""

    service: ArchiveService
    auth: Authorizer
    limiter: trio.CapacityLimiter
    metrics: Metrics

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work in a worker thread."""
        return await trio.to_thread.run_sync(fn, *args, limiter=self.limiter)


def hash_param(value: str, what: str) -> bytes:
    """A hash named in a request path; 400 unless it is 64 hex digits."""
    try:
        return string_to_hash(value)
    except HashStringError:
        raise HttpError(
            400, f"malformed {what}: expected 64 hex digits, got {value[:80]!r}"
        ) from None


def _number(digits: str) -> int:
    """A decimal number from a header, without converting thousands of digits (Python
    refuses past 4,300): any number too long to be a byte offset becomes 10**_DIGITS."""
    digits = digits.lstrip("0") or "0"
    return int(digits) if len(digits) <= _DIGITS else 10**_DIGITS


def parse_range(header: str | None, size: int, what: str) -> tuple[int, int]:
    """An HTTP Range of what (size bytes) as [start, end); 416 (with `Content-Range:
    bytes */size`) if unsatisfiable. No header: the whole object.

    Takes `bytes=S-E` (E inclusive, clipped to the end), `bytes=S-`, and the suffix form
    `bytes=-N`: the last N bytes, or the whole object when N >= size (RFC 9110, 14.1.2).
    """
    if header is None:
        return 0, size
    unsatisfiable = {"Content-Range": f"bytes */{size}"}
    m = _RANGE.match(header.strip())
    if not m or not (m.group(1) or m.group(2)):
        raise HttpError(
            416,
            f"unsupported Range header {header[:80]!r}: use bytes=START-END or bytes=-LENGTH",
            unsatisfiable,
        )
    if not m.group(1):
        length = _number(m.group(2))
        if length == 0 or size == 0:
            raise HttpError(416, f"{what}: empty suffix range of {size} bytes", unsatisfiable)
        return max(size - length, 0), size
    start = _number(m.group(1))
    end = _number(m.group(2)) + 1 if m.group(2) else size
    try:
        return clip_range(size, start, end, what)
    except OutOfRange as exc:
        raise HttpError(416, str(exc), unsatisfiable) from None


async def _body_parts(request: Request, limit: int, what: str) -> AsyncIterator[bytes]:
    """The request body's parts, refusing (413) anything over limit bytes before reading
    it all."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and _number(declared) > limit:
        raise HttpError(413, f"{what} exceeds the {limit}-byte limit")
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise HttpError(413, f"{what} exceeds the {limit}-byte limit")
        yield part


async def read_body(request: Request, limit: int, what: str) -> bytes:
    """The request body (up to limit bytes, else 413)."""
    return b"".join([part async for part in _body_parts(request, limit, what)])


async def spool_body(request: Request, limit: int, what: str) -> BinaryIO:
    """The request body (up to limit bytes, else 413) in an anonymous temporary file, at
    its start: a body of hundreds of MB is never in memory (the caller closes the file)."""
    file = await trio.to_thread.run_sync(tempfile.TemporaryFile)
    try:
        pending = bytearray()
        async for part in _body_parts(request, limit, what):
            pending += part
            if len(pending) >= SPOOL_WRITE:
                await trio.to_thread.run_sync(file.write, pending)
                pending.clear()
        await trio.to_thread.run_sync(file.write, pending)
        await trio.to_thread.run_sync(file.seek, 0)
    except BaseException:
        file.close()
        raise
    return file


def cache_control(request: Request, immutable: bool) -> str:
    """Cache-Control of content: a year and immutable when named by hash or version, else
    LATEST_MAX_AGE; public unless the request carried a token (embargoed content)."""
    scope = "private" if request.headers.get("authorization") else "public"
    return f"{scope}, {IMMUTABLE if immutable else f'max-age={LATEST_MAX_AGE}'}"


def not_modified(request: Request, etag: str, modified: float | None) -> bool:
    """May this GET or HEAD be answered 304? If-None-Match against etag (weak comparison),
    else If-Modified-Since against modified (RFC 9110, "Evaluation" of preconditions)."""
    if request.method not in ("GET", "HEAD"):
        return False
    match = request.headers.get("if-none-match")
    if match is not None:
        tags = [tag.strip().removeprefix("W/") for tag in match.split(",")]
        return "*" in tags or etag.removeprefix("W/") in tags
    since = request.headers.get("if-modified-since")
    if since is None or modified is None:
        return False
    try:
        return int(modified) <= parsedate_to_datetime(since).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return False  # a malformed date is ignored, as RFC 9110 says


_NOT_IN_304 = ("content-length", "content-type", "content-range", "accept-ranges")


def validated(
    request: Request, response: Response, *, cache: str, modified: float | None = None
) -> Response:
    """response with validators and Cache-Control `cache` (unless it has its own), or a 304
    when request's conditions hold (RFC 9110, "Conditional Requests"). A 200 without an
    ETag gets a strong one from its body; a streamed reply is left as it is."""
    body = getattr(response, "body", None)
    if response.status_code != 200 or not isinstance(body, bytes):
        return response
    headers = response.headers
    if "etag" not in headers:
        headers["ETag"] = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    if modified is not None and "last-modified" not in headers:
        headers["Last-Modified"] = formatdate(modified, usegmt=True)
    headers.setdefault("Cache-Control", cache)
    if not not_modified(request, headers["etag"], modified):
        return response
    kept = {k: v for k, v in headers.items() if k.lower() not in _NOT_IN_304}
    return Response(b"", status_code=304, headers=kept)


def negotiate(accept: str | None, offers: Sequence[str]) -> str:
    """The best offer for an Accept header; offers[0] when none is acceptable."""
    ranges = []
    for item in (accept or "").split(","):
        media, *params = (part.strip() for part in item.split(";"))
        q = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if media:
            ranges.append((media.lower(), q))
    best, best_key = offers[0], (0.0, -1, 0)
    for index, offer in enumerate(offers):
        kind = offer.split("/")[0] + "/*"
        specificity, q = -1, 0.0
        for media, quality in ranges:
            s = 2 if media == offer else 1 if media == kind else 0 if media == "*/*" else -1
            if s > specificity:
                specificity, q = s, quality
        key = (q, specificity, -index)
        if q > 0 and key > best_key:
            best, best_key = offer, key
    return best
