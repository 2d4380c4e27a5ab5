"""The XET CAS API (spec: "CAS API"), as hf_xet 1.8 calls it, over the archive service.

The rules (intake, reconstructions, dedup) are the service's; this is HTTP around them.
Service calls block (SQLite, files, hashing every chunk), so each runs in a worker thread.
Xorbs arrive either whole (`POST /v1/xorbs/...`) or, as hf_xet 1.8 first tries, through an
upload grant: `POST /v1/xorb-grants/...` answers a signed URL of this server's
`PUT /v1/xorb-uploads/{xorb}`, and `POST /v1/xorb-commits/...` confirms the xorb is stored.
The grant is stateless (its id is the xorb hash, its URL signed by a key of its own). Shards
arrive on `POST /v1/shards` (JSON reply) or `POST /v2/shards` (an NDJSON event stream).
`GET /v1/reconstructions?file_id=...` answers many whole files at once, as xet-core's batch
route does (a get of many small files asks once per hundred, not once per file).
`POST /v1/telemetry` takes hf_xet's small upload summaries from token holders and drops
them. `GET /v1/stats` (read scope) reports what the CAS has served since the server started
(CasStats), e.g. to measure a client's read amplification.
"""

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import msgpack
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from arkfs.server.auth import Scope
from arkfs.server.http import (
    IMMUTABLE,
    Face,
    HttpError,
    hash_param,
    negotiate,
    not_modified,
    parse_range,
    read_body,
    validated,
)
from arkfs.server.intake import (
    INTAKES_PATH,
    WAIT,
    Intakes,
    Pending,
    Progress,
    accepted,
    still_checking,
    wanted_wait,
)
from arkfs.server.metrics import upload_route
from arkfs.server.signing import SIGNATURE, UrlSigner
from arkfs.server.zerocopy import SENDFILE_MIN, FileBody
from arkfs.service.archive_service import DEDUP_KEY_TTL, MAX_SHARD_SIZE, shard_hash
from arkfs.store.errors import NotFound
from arkfs.xet.constants import MAX_XORB_ACCEPTED
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import (
    BATCH_FILES,
    BINARY_TYPE,
    FOOTERS_HEADER,
    FOOTERS_HELD_HEADER,
    Reconstruction,
    batch_to_json,
    held_name,
    held_names,
)
from arkfs.xet.shard import serialize_stored

_FORMS = ("application/json", BINARY_TYPE)  # a reconstruction's, JSON by default
MAX_TELEMETRY = 64 * 1024  # hf_xet's upload summaries are about 1.3 KiB of JSON


@dataclass
class CasStats:
    """What the CAS has done since the server started: counters in memory, never persisted.

    Xorb GETs with a suffix Range (`bytes=-N`) are how clients locate footers, so they are
    counted apart from data reads.
    """

    reconstructions: int = 0  # files' reconstructions sent (v1, v2 and in batches)
    batch_reconstructions: int = 0  # batch replies sent, each of several files
    reconstruction_bytes: int = 0  # file bytes those replies cover (their Range, clipped)
    reconstruction_bytes_sent: int = 0  # body bytes of those replies (terms, URLs, footers)
    xorb_requests: int = 0  # GETs of xorb data through signed URLs, suffix Ranges excluded
    xorb_bytes_served: int = 0  # body bytes those GETs returned
    footer_requests: int = 0  # GETs of xorb data with a suffix Range
    footer_bytes_served: int = 0  # body bytes those GETs returned
    xorb_bytes_sendfile: int = 0  # of those two, the bytes sent from the file by sendfile
    dedup_queries: int = 0  # chunk dedup queries answered with a shard
    xorb_uploads: int = 0  # xorbs received and validated (new or already stored)
    xorb_bytes_received: int = 0  # body bytes of those uploads
    shard_uploads: int = 0  # shards received and registered (new or already stored)


@dataclass
class CasService(Face):
    """The CAS endpoints: HTTP around the archive service, signed xorb URLs, and counters."""

    signer: UrlSigner
    stats: CasStats = field(default_factory=CasStats)
    grants: UrlSigner = field(init=False)  # signs upload URLs: a read URL cannot upload
    intakes: Intakes = field(init=False)  # shard intakes under way or just done

    def __post_init__(self) -> None:
        self.grants = self.signer.derived("xorb upload")
        self.intakes = Intakes(self.run)

    def routes(self) -> list[Route]:
        """Starlette routes of the CAS API, each body limited (by read_body) where it has one."""
        return [
            Route("/v1/reconstructions", self.reconstruction_batch),
            Route("/v1/reconstructions/{file_id}", self.reconstruction_v1),
            Route("/v2/reconstructions/{file_id}", self.reconstruction_v2),
            Route("/v1/chunks/{prefix}/{chunk}", self.dedup),
            Route(
                "/v1/xorbs/{prefix}/{xorb}",
                self.upload_xorb,
                methods=["POST"],
                name=upload_route("xorb"),
            ),
            Route("/v1/xorb-grants/{prefix}/{xorb}", self.xorb_grant, methods=["POST"]),
            Route(
                "/v1/xorb-uploads/{xorb}",
                self.granted_upload,
                methods=["PUT"],
                name=upload_route("xorb"),
            ),
            Route(
                "/v1/xorb-commits/{prefix}/{xorb}/grant/{grant}", self.xorb_commit, methods=["POST"]
            ),
            Route("/v1/shards", self.upload_shard, methods=["POST"], name=upload_route("shard")),
            Route("/v2/shards", self.upload_shard_v2, methods=["POST"], name=upload_route("shard")),
            Route(INTAKES_PATH + "{shard}", self.shard_intake),
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
        fh = hash_param(request.path_params["file_id"], "file id")
        what = f"file {hash_to_string(fh)}"
        range_header = request.headers.get("range")
        url_for = self._url_for(request)
        with_footers = request.headers.get(FOOTERS_HEADER) == "1"

        def rebuilt() -> tuple[Reconstruction, int, int]:
            """The reconstruction of the Range, and the Range: one worker thread call (a
            thread hop costs this server 0.3-0.6 ms of CPU, as much as the work)."""
            record = self.service.file(fh)
            start, end = parse_range(range_header, record.size, what)
            rec = self.service.reconstruction(record, start, end, url_for, with_footers)
            return rec, start, end

        rec, start, end = await self.run(rebuilt)
        rec = _without_held(rec, request)
        self.stats.reconstructions += 1
        self.stats.reconstruction_bytes += end - start
        binary = _binary(request, with_footers)
        return self._reply(request, rec.to_v2(binary) if v2 else rec.to_v1(binary), binary)

    async def reconstruction_batch(self, request: Request) -> Response:
        """Many whole files' reconstructions in one reply (xet-core's batch route,
        reconstruction.py): a file this CAS does not hold is left out."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        names = request.query_params.getlist("file_id")
        if not names or len(names) > BATCH_FILES:
            raise HttpError(400, f"name 1 to {BATCH_FILES} files, each as a file_id parameter")
        hashes = list(dict.fromkeys(hash_param(name, "file id") for name in names))
        url_for = self._url_for(request)
        with_footers = request.headers.get(FOOTERS_HEADER) == "1"

        def rebuilt() -> dict[bytes, Reconstruction]:
            """Each known file's whole reconstruction: one worker thread call for them all."""
            recs = {}
            for fh in hashes:
                try:
                    record = self.service.file(fh)
                except NotFound:
                    continue
                recs[fh] = self.service.reconstruction(
                    record, 0, record.size, url_for, with_footers
                )
            return recs

        recs = {fh: _without_held(rec, request) for fh, rec in (await self.run(rebuilt)).items()}
        self.stats.batch_reconstructions += 1
        self.stats.reconstructions += len(recs)
        self.stats.reconstruction_bytes += sum(r.unpacked_length for r in recs.values())
        binary = _binary(request, with_footers)
        return self._reply(request, batch_to_json(recs, binary), binary)

    def _url_for(self, request: Request) -> Callable[[bytes], str]:
        """Where a reply sends a client for a xorb's bytes: the store's own pre-signed URL
        (no xorb byte then passes through this server), else one this server signs and
        serves (Pre-Signed URL Handling)."""
        base_url = str(request.base_url)

        def url_for(xh: bytes) -> str:
            direct = self.service.store.xorb_url(xh, self.signer.ttl)
            return direct or self.signer.sign(base_url, hash_to_string(xh))[0]

        return url_for

    def _reply(self, request: Request, body: dict[str, Any], binary: bool) -> Response:
        """A reconstruction reply: body as JSON, or msgpack if binary; counted."""
        # The same within a signing window (signing.py), so a client may revalidate it: 304.
        headers = {"Vary": f"Range, Accept, {FOOTERS_HEADER}, {FOOTERS_HELD_HEADER}"}
        if binary:
            packed = msgpack.packb(body, use_bin_type=True)
            response = Response(packed, media_type=BINARY_TYPE, headers=headers)
        else:
            response = JSONResponse(body, headers=headers)
        self.stats.reconstruction_bytes_sent += len(response.body)
        return validated(request, response, cache="private, no-cache")

    async def xorb_data(self, request: Request) -> Response:
        """Xorb bytes behind a signed URL, with Range and bounded caching (HTTP Caching Headers)."""
        name = request.path_params["xorb"]
        try:
            query = request.query_params
            left = self.signer.check(name, query.get("expires", ""), query.get(SIGNATURE, ""))
        except PermissionError as exc:
            raise HttpError(403, str(exc)) from None
        xh = hash_param(name, "xorb hash")
        store = self.service.store  # raw xorb bytes: no archive rule applies
        range_header = request.headers.get("range")
        del left  # the bytes behind a xorb's name never change: caches may keep them
        headers = {
            "Cache-Control": f"public, {IMMUTABLE}",
            "ETag": f'"{name}"',
            "Accept-Ranges": "bytes",
        }
        unchanged = not_modified(request, headers["ETag"], None)
        wanted = request.method != "HEAD" and not unchanged

        def ranged() -> tuple[int, int, int, bytes, int | None]:
            """The xorb's size, the Range, and its bytes and file if wanted: one worker
            thread call (a missing xorb is a 404 before any 304 or 416)."""
            try:
                size = store.xorb_size(xh)
            except NotFound:
                raise HttpError(404, f"no xorb {name}") from None
            start, end = parse_range(range_header, size, f"xorb {name}")
            if not wanted:
                return size, start, end, b"", None
            if end - start < SENDFILE_MIN:
                return size, start, end, store.read_xorb(xh, start, end), None
            return size, start, end, *store.read_xorb_file(xh, start, end)

        size, start, end, body, fd = await self.run(ranged)
        if unchanged:
            return Response(b"", status_code=304, headers=headers)
        partial = range_header is not None
        if partial:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        if wanted:  # the bytes were read: count them
            if range_header is not None and range_header.strip().startswith("bytes=-"):
                self.stats.footer_requests += 1
                self.stats.footer_bytes_served += len(body)
            else:
                self.stats.xorb_requests += 1
                self.stats.xorb_bytes_served += len(body)
            self.metrics.served.labels("xorb").inc(len(body))
        headers["Content-Length"] = str(end - start)
        status, media_type = 206 if partial else 200, "application/octet-stream"
        if fd is not None:  # sent from the file (zerocopy.py)
            return FileBody(body, fd, start, self._sent_from_file, status, headers, media_type)
        return Response(body, status_code=status, headers=headers, media_type=media_type)

    def _sent_from_file(self, size: int) -> None:
        self.stats.xorb_bytes_sendfile += size

    async def dedup(self, request: Request) -> Response:
        """Query Chunk Deduplication: a shard of the xorbs holding the chunk, keyed hashes."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        ch = hash_param(request.path_params["chunk"], "chunk hash")
        shard = await self.run(self.service.dedup_shard, ch)
        if shard is None:
            raise HttpError(404, "chunk not tracked by global deduplication")
        self.stats.dedup_queries += 1
        return Response(
            serialize_stored(shard),
            media_type="application/octet-stream",
            headers={
                "Cache-Control": f"private, max-age={DEDUP_KEY_TTL}",
                "Vary": "Authorization",
            },
        )

    # --- writes ------------------------------------------------------------------------

    async def upload_xorb(self, request: Request) -> Response:
        """Upload Xorb: validate format and hash (400 on any error), then store atomically."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        return await self._store_xorb(request, hash_param(request.path_params["xorb"], "xorb hash"))

    async def _store_xorb(self, request: Request, xh: bytes) -> Response:
        body = await read_body(request, MAX_XORB_ACCEPTED, "xorb")
        inserted = await self.run(self.service.put_xorb, xh, body)
        self.stats.xorb_uploads += 1
        self.stats.xorb_bytes_received += len(body)
        return JSONResponse({"was_inserted": inserted})

    async def xorb_grant(self, request: Request) -> Response:
        """An upload grant (hf_xet 1.8): 200 if the xorb is stored already, else 201 with a
        signed URL of granted_upload, valid for the signer's ttl. The body's length and
        checksum are not needed: granted_upload checks the xorb's hash itself."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        xh = hash_param(request.path_params["xorb"], "xorb hash")
        await read_body(request, MAX_TELEMETRY, "xorb grant request")
        if await self.run(self.service.store.has_xorb, xh):
            return JSONResponse({})
        name = hash_to_string(xh)
        url, _ = self.grants.sign(str(request.base_url), name, route="xorb-uploads")
        grant = {"id": name, "method": "PUT", "url": url, "headers": {}}
        return JSONResponse(grant, status_code=201, headers={"Cache-Control": "no-store"})

    async def granted_upload(self, request: Request) -> Response:
        """The upload behind a grant's signed URL: the xorb is checked and stored as by
        upload_xorb (no Authorization: the signature is the grant)."""
        name = request.path_params["xorb"]
        query = request.query_params
        try:
            self.grants.check(name, query.get("expires", ""), query.get(SIGNATURE, ""))
        except PermissionError as exc:
            raise HttpError(403, str(exc)) from None
        return await self._store_xorb(request, hash_param(name, "xorb hash"))

    async def xorb_commit(self, request: Request) -> Response:
        """Commit a grant: 200 once its xorb is stored, 404 (upload again) while it is not."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        xh = hash_param(request.path_params["xorb"], "xorb hash")
        if not await self.run(self.service.store.has_xorb, xh):
            raise HttpError(404, f"no upload of xorb {hash_to_string(xh)} for this grant")
        return JSONResponse({"was_inserted": True})

    async def upload_shard(self, request: Request) -> Response:
        """Upload Shard: validate it against the stored xorbs, then register its files; a
        check that outlasts the request is answered 202 or 503 (intake.py)."""
        asks_async, wait = wanted_wait(request.headers.get("prefer"))
        try:
            inserted = await self._register_shard(request, wait)
        except Pending as exc:
            if asks_async:
                return accepted(exc)
            raise still_checking(exc) from None
        return JSONResponse({"result": 1 if inserted else 0})

    async def shard_intake(self, request: Request) -> Response:
        """Poll a shard intake that was answered 202: 202 while under way, then as the POST."""
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        name = hash_to_string(hash_param(request.path_params["shard"], "shard hash"))
        try:
            inserted = self.intakes.poll(name)
        except Pending as exc:
            return accepted(exc)
        return JSONResponse({"result": 1 if inserted else 0})

    async def upload_shard_v2(self, request: Request) -> Response:
        """Upload Shard as hf_xet 1.8 first tries it: the same work, answered as NDJSON events
        whose last is `{"type": "result"}`. Errors are answered before any event, with their
        status, as on every route."""
        try:
            await self._register_shard(request, WAIT)
        except Pending as exc:
            raise still_checking(exc) from None
        return Response(json.dumps({"type": "result"}) + "\n", media_type="application/x-ndjson")

    async def _register_shard(self, request: Request, wait: float) -> bool:
        self.auth.require(request.headers.get("authorization"), Scope.WRITE)
        body = await read_body(request, MAX_SHARD_SIZE, "shard")
        name = hash_to_string(await self.run(shard_hash, body))

        def register(progress: Progress) -> bool:
            return self.service.put_shard(body, progress)

        inserted = await self.intakes.register(name, register, wait)
        self.stats.shard_uploads += 1
        return inserted

    async def telemetry(self, request: Request) -> Response:
        """hf_xet's upload summaries: taken from token holders (of either scope), small, and
        dropped: arkfs keeps no client telemetry."""
        self.auth.require(request.headers.get("authorization"), Scope.READ, anonymous=False)
        await read_body(request, MAX_TELEMETRY, "telemetry report")
        return JSONResponse({})


def _binary(request: Request, with_footers: bool) -> bool:
    """Whether the reply takes the binary form (BINARY_TYPE): asked with footers, a client
    may take it (no base64, no JSON)."""
    return with_footers and negotiate(request.headers.get("accept"), _FORMS) == BINARY_TYPE


def _without_held(rec: Reconstruction, request: Request) -> Reconstruction:
    """rec without the footers the client says it holds (FOOTERS_HELD_HEADER)."""
    held = held_names(request.headers.get(FOOTERS_HELD_HEADER))
    if not held:
        return rec
    kept = {xh: f for xh, f in rec.footers.items() if held_name(xh) not in held}
    return replace(rec, footers=kept)
