"""The XET CAS API (spec: "CAS API"), as hf_xet 1.8 calls it, over an arkfs Store.

Store calls block (SQLite, files), so each runs in a worker thread; so do xorb and shard
validation, which hash every chunk. `GET /v1/stats` (read scope) reports what the CAS has
served since the server started (CasStats), e.g. to measure a client's read amplification.
"""

import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import blake3
import trio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arkfs.server.auth import Authorizer, Scope
from arkfs.server.signing import UrlSigner
from arkfs.store.base import Store
from arkfs.store.errors import NotFound, Rejected
from arkfs.store.plan import dedup_blocks, plan_reconstruction, shard_records
from arkfs.xet.constants import MAX_XORB_ACCEPTED
from arkfs.xet.errors import HashStringError, XetError
from arkfs.xet.hashing import hash_to_string, string_to_hash
from arkfs.xet.shard import (
    keyed_dedup_shard,
    serialize_stored,
)
from arkfs.xet.xorb import parse_xorb

MAX_SHARD_SIZE = 64 * 1024 * 1024  # Denial of Service Considerations
DEDUP_KEY_TTL = 3600
_RANGE = re.compile(r"bytes=(\d*)-(\d*)$")
T = TypeVar("T")


class HttpError(Exception):
    """An error reply: status, a one-line reason, and any headers it needs."""

    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self.status, self.message, self.headers = status, message, headers or {}
        super().__init__(message)


def error_response(status: int, message: str) -> Response:
    """A JSON error body with a one-line reason."""
    return JSONResponse({"error": message}, status_code=status)


@dataclass
class CasStats:
    """What the CAS has done since the server started: counters in memory, never persisted.

    Xorb GETs with a suffix Range (`bytes=-N`) are how clients locate footers, so they are
    counted apart from data reads.
    """

    reconstructions: int = 0  # reconstruction replies sent (v1 and v2)
    reconstruction_bytes: int = 0  # file bytes those replies cover (their Range, clipped)
    xorb_requests: int = 0  # GETs of xorb data through signed URLs, suffix Ranges excluded
    xorb_bytes_served: int = 0  # body bytes those GETs returned
    footer_requests: int = 0  # GETs of xorb data with a suffix Range
    footer_bytes_served: int = 0  # body bytes those GETs returned
    dedup_queries: int = 0  # chunk dedup queries answered with a shard
    xorb_uploads: int = 0  # xorbs received and validated (new or already stored)
    xorb_bytes_received: int = 0  # body bytes of those uploads
    shard_uploads: int = 0  # shards received and registered (new or already stored)


@dataclass
class CasService:
    """The CAS endpoints' shared state."""

    store: Store
    auth: Authorizer
    signer: UrlSigner
    limiter: trio.CapacityLimiter
    stats: CasStats = field(default_factory=CasStats)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run blocking work in a worker thread."""
        return await trio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    def routes(self) -> list[Route]:
        """Starlette routes of the CAS API."""
        return [
            Route("/v1/reconstructions/{file_id}", self.reconstruction_v1),
            Route("/v2/reconstructions/{file_id}", self.reconstruction_v2),
            Route("/v1/chunks/{prefix}/{chunk}", self.dedup),
            Route("/v1/xorbs/{prefix}/{xorb}", self.upload_xorb, methods=["POST"]),
            Route("/v1/shards", self.upload_shard, methods=["POST"]),
            Route("/v1/telemetry", self.telemetry, methods=["POST"]),
            Route("/v1/xorb-data/{xorb}", self.xorb_data, methods=["GET", "HEAD"]),
            Route("/v1/stats", self.stats_route),
        ]

    async def stats_route(self, request: Request) -> Response:
        """The CasStats counters as a JSON object (read scope)."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        return JSONResponse(asdict(self.stats), headers={"Cache-Control": "no-store"})

    # --- reads -------------------------------------------------------------------------

    async def reconstruction_v1(self, request: Request) -> Response:
        return await self._reconstruction(request, v2=False)

    async def reconstruction_v2(self, request: Request) -> Response:
        return await self._reconstruction(request, v2=True)

    async def _reconstruction(self, request: Request, v2: bool) -> Response:
        """Get File Reconstruction: only the terms that overlap the Range, trimmed to chunks."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        fh = _hash_param(request.path_params["file_id"], "file id")
        try:
            record = await self.run(self.store.get_file, fh)
        except NotFound:
            raise HttpError(404, f"no file {hash_to_string(fh)} in this CAS") from None
        start, end = parse_range(request.headers.get("range"), record.size)
        base_url = str(request.base_url)
        rec = await self.run(
            plan_reconstruction,
            self.store,
            record,
            start,
            end,
            lambda xh: self.signer.sign(base_url, hash_to_string(xh))[0],
        )
        self.stats.reconstructions += 1
        self.stats.reconstruction_bytes += end - start
        body = rec.to_v2() if v2 else rec.to_v1()
        return JSONResponse(body, headers={"Cache-Control": "private, no-store"})

    async def xorb_data(self, request: Request) -> Response:
        """Xorb bytes behind a signed URL, with Range and bounded caching (HTTP Caching Headers)."""
        name = request.path_params["xorb"]
        try:
            left = self.signer.check(
                name, request.query_params.get("expires", ""), request.query_params.get("sig", "")
            )
        except PermissionError as exc:
            raise HttpError(403, str(exc)) from None
        xh = _hash_param(name, "xorb hash")
        try:
            size = await self.run(self.store.xorb_size, xh)
        except NotFound:
            raise HttpError(404, f"no xorb {name}") from None
        range_header = request.headers.get("range")
        start, end = parse_range(range_header, size)
        headers = {
            "Cache-Control": f"public, immutable, max-age={left}",
            "Expires": time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + left)),
            "ETag": f'"{name}"',
            "Accept-Ranges": "bytes",
        }
        partial = range_header is not None
        if partial:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        body = b""
        if request.method != "HEAD":
            body = await self.run(self.store.read_xorb, xh, start, end)
            if range_header is not None and range_header.strip().startswith("bytes=-"):
                self.stats.footer_requests += 1
                self.stats.footer_bytes_served += len(body)
            else:
                self.stats.xorb_requests += 1
                self.stats.xorb_bytes_served += len(body)
        headers["Content-Length"] = str(end - start)
        return Response(
            body,
            status_code=206 if partial else 200,
            headers=headers,
            media_type="application/octet-stream",
        )

    async def dedup(self, request: Request) -> Response:
        """Query Chunk Deduplication: a shard of the xorbs holding the chunk, keyed hashes."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        ch = _hash_param(request.path_params["chunk"], "chunk hash")
        blocks = await self.run(dedup_blocks, self.store, ch)
        if not blocks:
            raise HttpError(404, "chunk not tracked by global deduplication")
        now = int(time.time())
        key = blake3.blake3(self.signer.key + (now // DEDUP_KEY_TTL).to_bytes(8, "little")).digest()
        shard = keyed_dedup_shard(
            blocks, key, creation_timestamp=now, key_expiry=now + DEDUP_KEY_TTL
        )
        self.stats.dedup_queries += 1
        return Response(
            serialize_stored(shard),
            media_type="application/octet-stream",
            headers={"Cache-Control": "private, max-age=3600", "Vary": "Authorization"},
        )

    # --- writes ------------------------------------------------------------------------

    async def upload_xorb(self, request: Request) -> Response:
        """Upload Xorb: validate format and hash (400 on any error), then store atomically."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        xh = _hash_param(request.path_params["xorb"], "xorb hash")
        body = await read_body(request, MAX_XORB_ACCEPTED, "xorb")
        try:
            parsed = await self.run(parse_xorb, body, xh)
        except XetError as exc:
            raise HttpError(400, f"invalid xorb: {exc}") from None
        inserted = await self.run(self.store.put_xorb, xh, parsed.serialize())
        self.stats.xorb_uploads += 1
        self.stats.xorb_bytes_received += len(body)
        return JSONResponse({"was_inserted": inserted})

    async def upload_shard(self, request: Request) -> Response:
        """Upload Shard: validate it against the stored xorbs, then register its files."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        body = await read_body(request, MAX_SHARD_SIZE, "shard")
        name = blake3.blake3(body).digest()
        try:
            records, dedup = await self.run(shard_records, self.store, body)
            inserted = await self.run(self.store.put_shard, name, body, records, dedup)
        except Rejected as exc:
            raise HttpError(400, str(exc)) from None
        self.stats.shard_uploads += 1
        return JSONResponse({"result": 1 if inserted else 0})

    async def telemetry(self, request: Request) -> Response:
        await request.body()
        return JSONResponse({})


def _hash_param(value: str, what: str) -> bytes:
    try:
        return string_to_hash(value)
    except HashStringError:
        raise HttpError(
            400, f"malformed {what}: expected 64 hex digits, got {value[:80]!r}"
        ) from None


def parse_range(header: str | None, size: int) -> tuple[int, int]:
    """An HTTP Range as [start, end); 416 (with `Content-Range: bytes */size`) if unsatisfiable.

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
        length = int(m.group(2))
        if length == 0 or size == 0:
            raise HttpError(416, f"empty suffix range of a {size}-byte object", unsatisfiable)
        return max(size - length, 0), size
    start = int(m.group(1))
    end = min(int(m.group(2)) + 1, size) if m.group(2) else size
    if start >= size or start >= end:
        raise HttpError(416, f"range starts at {start}, past the end ({size} bytes)", unsatisfiable)
    return start, end


async def read_body(request: Request, limit: int, what: str) -> bytes:
    """The request body, refusing (413) anything over limit bytes before reading it all."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HttpError(413, f"{what} of {declared} bytes exceeds the {limit}-byte limit")
    parts = []
    size = 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise HttpError(413, f"{what} exceeds the {limit}-byte limit")
        parts.append(part)
    return b"".join(parts)
