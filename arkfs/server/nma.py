"""The ARK name mapping authority (NMA) of `arkfs serve`: archives, their parts, their ERCs.

Routes, on the same base URL as the CAS; the resolver service path is "/":

- `GET /ark:NAAN/Name[/components][.variants]` (read scope). Any equivalent spelling
  reaches the same object (Normalization and Lexical Equivalence). The archive is the
  binding of `ark:NAAN/Name`; components name a path inside it, with file names escaped
  as `filename_to_qualifier` does (`c3/s5%2Ev7%2Exsl`) or typed plainly (`c3/s5.v7.xsl`).
  Replies name objects by that escaped, normalized form. `ark:NAAN/Name/@vN[/...]` is
  version N (arkfs.ark.version_qualifier) and answers everything below from that version; without
  it, the latest version answers, and Content-Location names the version it was.
  - Inflected with `?info` or `??` (THUMP): the ERC record as text/plain ANVL with
    THUMP-Status and Link headers; as JSON `{"ark", "erc"}` with `Accept: application/json`
    or `&format=json` (`?info&format=json`). A bare `?` cannot be told apart from no
    query once hypercorn has parsed the request, so it gets the object itself. The JSON
    record of an archive root also has `version` (its VersionInfo) and, without `@vN`,
    `versions` (every version, oldest first).
  - The archive root, by content negotiation: the manifest as msgpack
    (application/vnd.arkfs.manifest+msgpack, application/msgpack, application/x-msgpack)
    or JSON (application/json, or `?format=json`), with cas_url (base URL, no trailing
    slash) and token_url (base URL + `v1/token`) filled in when unset; the ERC record as
    ANVL for `text/plain`; otherwise the HTML landing page (pages.py). Last-Modified is
    when the version was bound.
  - `?linkset`: the FAIR Signposting links as an RFC 9264 linkset; archive, directory and
    file replies carry the same links as `Link` headers (signposting.py).
  - `?tar` on the archive root or a directory: all of it as one tar (tarball.py); 400 on
    a file.
  - `?info` asked for as text/html (a browser): the landing page of what it describes.
  - A directory: an HTML listing, or `{"ark", "entries"}` JSON when asked.
  - A file: its bytes, every chunk verified, with Range (206, 416), ETag (the XET hash),
    Repr-Digest (when the manifest has the SHA-256) and Last-Modified (its mtime). Damage
    found before the headers go out is a 500; after, the connection is dropped.
  - A symlink: 302 to the ARK of its target when that is inside the archive, else 404.
  - Caching (http.validated): every other 200 carries a strong ETag of its body and
    Last-Modified (when the version was bound), and conditional requests get 304. Under
    `@vN` a reply is immutable for a year unless it lists the other versions (the root);
    the latest is kept LATEST_MAX_AGE.
  - A path whose normalized form names nothing, but whose raw spelling is an entry's path
    (normalization drops hyphens: `data/2024-01-01.csv`): 301 to that entry's ARK, the
    query kept (so `?info` too), under the same version.
- An embargoed archive (embargo.py), until its date: to a request without a read token
  (though --open-read), its `?info` record and its landing page (the record without its
  files) only; everything else wants a read token (401).
- `PUT /ark:NAAN/Name` (write scope under a shoulder of the token, in a NAAN of
  `serve --naan`; else 403 JSON `{"error", "ark", "shoulder", "granted"}`): bind the
  next version of an archive. Body: msgpack
  `{"manifest": <manifest msgpack bytes>, "erc": <ANVL text>, "message": <text, optional>}`;
  every file must already be in the CAS with its size. Answers `{"ark"}` and the new
  version's VersionInfo (`version`, `created`, `message`, `follows`, `files`, `bytes`);
  413 over 256 MiB.
- A withdrawn archive (a tombstone version covers the one asked for: withdrawal.py):
  every GET of its content, in every version, is 410 Gone with its ERC record,
  persistence statement and reason (a page, or text); `?info` stays 200 with the record
  and the reason; the tombstone's own empty manifest is served, so mounts show it empty.
- `GET /arks?prefix=ark:NAAN/` (read scope): `{"arks": [...]}`, sorted normalized ARKs.
- `GET /` (no token): the resolver's home page; `?prefix=` (read scope) lists bound ARKs.
- `GET /.well-known/ark` (no token): the service path "/" and nothing else, as the spec
  asks (IANA Considerations); the header X-Arkfs-Resolver says its ARKs are arkfs archives.

HEAD works wherever GET does. The rules (bind, archives, files) are the archive service's.
Errors on these routes are one line of text/plain naming the ARK or the problem, or an
HTML page for a client that prefers text/html (app.py maps them): 400 malformed ARK,
version or bind, 401/403 token, 404 unknown ARK, version or path, 416 range, 500 damaged
store, 503 store unavailable. (The CAS routes answer errors as JSON.)
"""

import json
import logging
import mimetypes
import os
import posixpath
import re
import time
from base64 import b64encode
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from email.utils import formatdate
from typing import Any, BinaryIO
from urllib.parse import quote, unquote

from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from arkfs.archive.embargo import embargoed_until
from arkfs.archive.manifest import (
    MAX_MANIFEST_SIZE,
    Entry,
    Kind,
    Manifest,
    entry_ark,
    entry_erc,
    entry_path,
)
from arkfs.archive.record import Archive, VersionInfo
from arkfs.archive.withdrawal import Withdrawal, with_withdrawal
from arkfs.ark.errors import ArkError
from arkfs.ark.filenames import filename_text
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.thump import ARKFS_HEADER, info_response
from arkfs.ark.version_qualifier import split_version, versioned
from arkfs.export import bagit
from arkfs.server import citations, preview, tarball
from arkfs.server.auth import AuthError, Scope
from arkfs.server.bag import bag_members
from arkfs.server.http import (
    Face,
    HttpError,
    cache_control,
    negotiate,
    not_modified,
    parse_range,
    spool_body,
    validated,
)
from arkfs.server.metrics import upload_route
from arkfs.server.pages import (
    STYLESHEET,
    STYLESHEET_PATH,
    archive_page,
    embargo_page,
    file_page,
    gone_page,
    home_page,
)
from arkfs.server.public import route_raw_path
from arkfs.server.signposting import LINKSET, MAX_HEADER_ITEMS, link_header, links, linkset
from arkfs.server.view import Site, View
from arkfs.store.errors import StoreCorrupt
from arkfs.store.files import read_file
from arkfs.util.msgpack_file import FileSlice, read_map
from arkfs.xet.hashing import hash_to_string

log = logging.getLogger("arkfs.serve")

HTML = "text/html"
TEXT = "text/plain"
JSON = "application/json"
MSGPACK = "application/vnd.arkfs.manifest+msgpack"
MSGPACK_ALIASES = ("application/msgpack", "application/x-msgpack")
TAR = tarball.MEDIA_TYPE
ROOT_OFFERS = (HTML, JSON, MSGPACK, *MSGPACK_ALIASES, TEXT)  # what an archive root can be
MAX_BIND_BODY = MAX_MANIFEST_SIZE
Handler = Callable[[Request], Awaitable[Response]]


class _ArkRoute(Route):
    """Matches `/ark:...` with the label in any letter case (The ARK Label Part)."""

    def __init__(self, endpoint: Handler, methods: list[str], name: str | None = None) -> None:
        super().__init__("/ark:{rest:path}", endpoint, methods=methods, name=name)
        self.path_regex = re.compile(r"^/ark:(?P<rest>.*)$", re.IGNORECASE | re.DOTALL)


@dataclass
class NmaService(Face):
    """The NMA endpoints: HTTP around the archive service's bindings and files."""

    def routes(self) -> list[Route]:
        """Starlette routes of the NMA; only the bind PUT reads a body (up to MAX_BIND_BODY)."""
        return [
            Route("/", self.home),
            Route("/.well-known/ark", self.well_known),
            Route("/" + STYLESHEET_PATH, self.stylesheet),
            Route("/arks", self.list_arks),
            _ArkRoute(self.ark, methods=["GET"]),
            _ArkRoute(self.bind, methods=["PUT"], name=upload_route("bind")),
        ]

    # --- discovery ---------------------------------------------------------------------

    async def stylesheet(self, request: Request) -> Response:
        """The pages' one stylesheet (pages.py); it changes only with arkfs, cached a day."""
        headers = {"Cache-Control": "public, max-age=86400"}
        return Response(STYLESHEET, media_type="text/css", headers=headers)

    async def well_known(self, request: Request) -> Response:
        """Finding a Resolver Service: the service path, one line and nothing else (IANA
        Considerations: a strict client reads the whole body as the path); a header marks
        an arkfs resolver."""
        return Response(
            _service_path(request) + "\n", media_type="text/plain", headers={ARKFS_HEADER: "1"}
        )

    async def home(self, request: Request) -> Response:
        """The resolver's home page; `?prefix=` (read scope) searches the bound ARKs."""
        prefix = request.query_params.get("prefix")
        arks: list[str] = []
        if prefix is not None:
            self.auth.require(request.headers.get("authorization"), Scope.READ)
            arks = await self.run(self.service.list_archives, prefix)
        if self.auth.naans is not None:  # serve --naan: those it is authoritative for
            naans = sorted(self.auth.naans)
        else:
            naans = await self.run(self.service.store.naans)
        page = home_page(Site.of(request), naans, prefix, arks)
        return Response(page, media_type=HTML)

    async def list_arks(self, request: Request) -> Response:
        """The bound archives whose normalized ARK starts with ?prefix=."""
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        prefix = request.query_params.get("prefix", "")
        arks = await self.run(self.service.list_archives, prefix)
        return JSONResponse({"arks": arks})

    # --- ARKs --------------------------------------------------------------------------

    async def ark(self, request: Request) -> Response:
        """GET (or HEAD) an ARK-named object or its metadata."""
        ark = _request_ark(request)
        self.auth.require(request.headers.get("authorization"), Scope.READ)
        try:
            inner, version = split_version(ark)
        except ArkError as exc:
            raise HttpError(400, str(exc)) from None
        at_root = not inner.components and not inner.variants
        resolved = await self.run(self._resolve, str(ark.base), version, at_root)
        archive, versions, withdrawn = resolved
        root = versioned(archive.ark, version)  # how this request addresses the archive
        path = entry_path(root, ark)
        entry = archive.manifest.entry(path) if path else None
        query = request.url.query
        # Overview of THUMP: '?info' asks for metadata; '?' and '??' are reserved older forms
        # that are answered like it ('??' arrives as the query '?').
        inflection = query.split("&", 1)[0]
        view = View(archive, root, versions)
        if withdrawn is not None and inflection not in ("info", "?"):
            # Every path of a withdrawn archive is gone; only the tombstone's own (empty)
            # manifest is served, so that mounts show the archive empty.
            tombstone = withdrawn.version == archive.version.version and path == ""
            if not (tombstone and _choose(request, ROOT_OFFERS) not in (HTML, TEXT)):
                return self.gone(request, view, withdrawn)
        cite_as = None
        until = embargoed_until(archive.erc, time.time())
        if until is not None and not self._reader(request):
            # Embargo: only the archive's own record and landing page are public.
            landing = path == "" and not inflection and _choose(request, ROOT_OFFERS) == HTML
            record = path == "" and inflection in ("info", "?")
            if not (landing or record):
                self.auth.require(request.headers.get("authorization"), Scope.READ, anonymous=False)
            if landing or _choose(request, (TEXT, JSON, HTML)) == HTML:
                page = embargo_page(Site.of(request), root, archive.erc, until)
                return Response(page, media_type=HTML, headers={"Vary": "Accept"})
        if path is None or (path and entry is None):
            # Normalization drops hyphens: the raw spelling names the entry. It answers as
            # itself (200), so `curl --fail -o` saves it; its canonical ARK is the cite-as.
            entry = archive.manifest.entry(_literal_path(request, version is not None))
            if entry is None:
                nearest = entry_ark(root, _nearest(archive.manifest, path or ""))
                raise HttpError(404, f"{ark} is not in archive {root}", nearest=nearest)
            path = entry.path
            cite_as = Site.of(request).url(entry_ark(root, path))
        if inflection in ("info", "?"):
            response = await self.info(request, view, entry, withdrawn)
        elif inflection == "linkset":
            response = self.linkset(request, view, entry)
        elif inflection == tarball.INFLECTION:
            response = await self.tar(request, view, entry)
        elif inflection == bagit.INFLECTION:
            response = await self.bag(request, view, entry)
        elif entry is None:
            response = await self.root(request, view)
        elif entry.kind is Kind.DIR:
            response = self.directory(request, view, entry)
        elif entry.kind is Kind.SYMLINK:
            response = self.symlink(request, view, entry)
        else:
            response = await self.file(request, view, entry)
        if (
            inflection not in ("info", "?", "linkset", tarball.INFLECTION, bagit.INFLECTION)
            and response.status_code < 300
        ):
            # FAIR Signposting on the object itself (a symlink's 302 is none)
            signposts = links(Site.of(request), view, entry, MAX_HEADER_ITEMS)
            response.headers["Link"] = link_header(signposts)
        if cite_as is not None and 'rel="cite-as"' not in response.headers.get("Link", ""):
            cite = f'<{cite_as}>; rel="cite-as"'
            before = response.headers.get("Link")
            response.headers["Link"] = f"{before}, {cite}" if before else cite
        answered = response.status_code < 300 or response.status_code == 304
        if version is None and answered:
            # The latest version answered: say which one, by its ARK that never changes.
            exact = entry_ark(versioned(archive.ark, archive.version.version), path)
            response.headers["Content-Location"] = _service_path(request) + str(exact)
        if answered and not inflection and entry is not None and entry.kind is Kind.FILE:
            response.headers["Cache-Control"] = cache_control(request, version is not None)
            return response  # file() answered its own conditions, by the file's mtime
        # A version's pages and records are immutable unless they list the other versions.
        fixed = version is not None and not versions
        cache = cache_control(request, fixed)
        return validated(request, response, cache=cache, modified=archive.version.created)

    def _reader(self, request: Request) -> bool:
        """Does the request carry a token with read scope (not merely --open-read)?"""
        try:
            self.auth.require(request.headers.get("authorization"), Scope.READ, anonymous=False)
        except AuthError:
            return False
        return True

    def _resolve(
        self, ark: str, version: int | None, at_root: bool
    ) -> tuple[Archive, list[VersionInfo], Withdrawal | None]:
        """service.resolve, with every version only when the latest or an archive root is
        asked for; in a worker thread."""
        archive, every, withdrawn = self.service.resolve(ark, version)
        return archive, every if version is None or at_root else [], withdrawn

    def gone(self, request: Request, view: View, withdrawn: Withdrawal) -> Response:
        """410 Gone for any content of a withdrawn archive: its ERC record, persistence
        statement and the reason, as a page or as text (withdrawal.py)."""
        erc = with_withdrawal(view.archive.erc, withdrawn)
        if _choose(request, (TEXT, HTML)) == HTML:
            page = gone_page(Site.of(request), view.root, erc, withdrawn)
            return Response(page, status_code=410, media_type=HTML, headers={"Vary": "Accept"})
        head = f"{view.root} was withdrawn on {withdrawn.when}: {withdrawn.reason}\n\n"
        return Response(head + erc.to_anvl(), status_code=410, media_type=TEXT)

    async def info(
        self, request: Request, view: View, entry: Entry | None, withdrawn: Withdrawal | None
    ) -> Response:
        """The ERC record of the archive or of one of its entries (THUMP); of a withdrawn
        archive, with the withdrawal in its erc-support segment."""
        ark = entry_ark(view.root, entry.path) if entry else view.root
        erc = entry_erc(view.archive.erc, view.root, entry) if entry else view.archive.erc
        if withdrawn is not None:
            erc = with_withdrawal(erc, withdrawn)
        headers, body = info_response(ark, erc, service_path=_service_path(request))
        media = _choose(request, ("text/plain", JSON, HTML))
        if media == HTML and withdrawn is not None:
            page = gone_page(Site.of(request), view.root, erc, withdrawn)
            return Response(page, media_type=HTML, headers={"Vary": "Accept"})
        if media == HTML:  # a browser: the landing page of what the record describes
            if entry is not None and entry.kind is Kind.FILE:
                shown = ""
                if preview.kind(entry) is not None:
                    head = await self.run(preview.head, self.service, entry)
                    href = Site.of(request).href(entry_ark(view.root, entry.path))
                    shown = preview.preview_html(entry, href, head)
                page = file_page(Site.of(request), view, entry, erc, shown)
            else:
                page = archive_page(Site.of(request), view, entry.path if entry else "", entry, erc)
            return Response(page, media_type=HTML, headers={"Vary": "Accept"})
        if media == JSON:
            headers["Content-Type"] = JSON
            record: dict[str, Any] = {"ark": str(ark), "erc": erc.to_json()}
            if entry is None:
                record["version"] = view.archive.version.to_json()
                if view.root == view.archive.ark:  # the unversioned root
                    record["versions"] = [v.to_json() for v in view.versions]
            body = json.dumps(record)
        headers["Vary"] = "Accept"
        return Response(body, headers=headers)

    def linkset(self, request: Request, view: View, entry: Entry | None) -> Response:
        """`?linkset`: every signpost of the object as an RFC 9264 JSON linkset."""
        site = Site.of(request)
        anchor = site.url(entry_ark(view.root, entry.path if entry else ""))
        body = json.dumps(linkset(anchor, links(site, view, entry)))
        return Response(body, media_type=LINKSET)

    async def tar(self, request: Request, view: View, entry: Entry | None) -> Response:
        """`?tar`: the archive root or a directory as one tar, every file chunk-verified
        (tarball.py); its length is exact, so a reply cut short by damage cannot pass as whole."""
        if entry is not None and entry.kind is not Kind.DIR:
            ark = entry_ark(view.root, entry.path)
            raise HttpError(400, f"{ark} is no directory: ?tar downloads an archive or directory")
        archive, path = view.archive, entry.path if entry else ""
        top = entry.name if entry else f"{archive.ark.name}-{archive.version.name}"
        created = archive.version.created
        parts = await self.run(tarball.members, archive.manifest, path, top)
        return await self._tar_reply(request, entry_ark(view.root, path), top, created, parts)

    async def bag(self, request: Request, view: View, entry: Entry | None) -> Response:
        """`?bag`: the archive version's BagIt bag as one tar (bag.py), verified like `?tar`."""
        if entry is not None:
            ark = entry_ark(view.root, entry.path)
            raise HttpError(400, f"{ark} is no archive root: ?bag packs a whole archive version")
        archive = view.archive
        top = f"{archive.ark.name}-{archive.version.name}"
        parts = await self.run(bag_members, self.service, archive, top)
        return await self._tar_reply(request, view.root, top, archive.version.created, parts)

    async def _tar_reply(
        self, request: Request, ark: Ark, top: str, created: float, parts: list[tarball.Member]
    ) -> Response:
        """The tar of parts as top.tar, of exact length, streamed verified."""
        headers = {
            "Content-Length": str(tarball.tar_size(parts)),
            "Content-Disposition": _attachment(top + ".tar"),
            "Last-Modified": formatdate(created, usegmt=True),
        }
        if request.method == "HEAD":
            return Response(b"", headers=headers, media_type=TAR)
        pieces = tarball.tar_bytes(self.service, parts)
        return await self._verified(ark, pieces, 200, headers, TAR)

    async def root(self, request: Request, view: View) -> Response:
        """The archive root: manifest (msgpack or JSON) or the HTML landing page."""
        archive = view.archive
        media = _choose(request, ROOT_OFFERS + citations.MEDIA_TYPES)
        headers = {
            "Vary": "Accept",
            "Last-Modified": formatdate(archive.version.created, usegmt=True),
        }
        if media == HTML:
            body = archive_page(Site.of(request), view, "", None, archive.erc)
            return Response(body, media_type=HTML, headers=headers)
        if media in citations.BY_MEDIA_TYPE:
            url = Site.of(request).url(view.root)
            cited = citations.Cited.of(archive.erc, view.root, url, archive.version)
            text = citations.BY_MEDIA_TYPE[media].render(cited)
            return Response(text, media_type=media, headers=headers)
        if media == TEXT:  # the ERC record as ANVL, for a terminal
            return Response(archive.erc.to_anvl(), media_type=TEXT, headers=headers)
        base = str(request.base_url)

        def render() -> bytes:
            served = replace(
                archive.manifest,
                cas_url=archive.manifest.cas_url or base.rstrip("/"),
                token_url=archive.manifest.token_url or base + "v1/token",
            )
            if media == JSON:
                return json.dumps(served.to_json(), separators=(",", ":")).encode()
            return served.to_msgpack()

        return Response(await self.run(render), media_type=media, headers=headers)

    def directory(self, request: Request, view: View, entry: Entry) -> Response:
        """A directory: HTML listing or `{"ark", "entries"}`."""
        if _choose(request, (HTML, JSON)) == JSON:
            children = view.archive.manifest.children(entry.path)
            body = {
                "ark": str(entry_ark(view.root, entry.path)),
                "entries": [_entry_json(view.root, e) for e in children],
            }
            return JSONResponse(body, headers={"Vary": "Accept"})
        erc = entry_erc(view.archive.erc, view.root, entry)
        page = archive_page(Site.of(request), view, entry.path, entry, erc)
        return Response(page, media_type=HTML, headers={"Vary": "Accept"})

    def symlink(self, request: Request, view: View, entry: Entry) -> Response:
        """302 to the target's ARK when the target is an entry of the same archive version."""
        assert entry.target is not None
        target = posixpath.normpath(posixpath.join(entry.parent, entry.target))
        ark = entry_ark(view.root, entry.path)
        if entry.target.startswith("/") or target == ".." or target.startswith("../"):
            raise HttpError(404, f"{ark} is a symlink to {entry.target!r}, outside the archive")
        target = "" if target == "." else target
        if target and view.archive.manifest.entry(target) is None:
            raise HttpError(404, f"{ark} is a symlink to {entry.target!r}, which does not exist")
        url = _service_path(request) + str(entry_ark(view.root, target))
        return RedirectResponse(url, status_code=302)

    async def file(self, request: Request, view: View, entry: Entry) -> Response:
        """A file's bytes, rebuilt from the store and verified chunk by chunk."""
        assert entry.xet_hash is not None
        xet_hash, ark = entry.xet_hash, entry_ark(view.root, entry.path)
        range_header = request.headers.get("range")
        headers = {
            "ETag": f'"{hash_to_string(xet_hash)}"',
            "Accept-Ranges": "bytes",
            "Last-Modified": formatdate(entry.mtime_ns / 1e9, usegmt=True),
        }
        unchanged = not_modified(request, headers["ETag"], entry.mtime_ns / 1e9)
        wanted = request.method != "HEAD" and not unchanged

        def opened() -> tuple[int, int, int, Generator[bytes, None, None] | None, bytes]:
            """The file's size, the Range, and (if wanted) its pieces and the first one: one
            worker thread call, in the order 404 or 500, 416, then 304 (a thread hop cost
            this server as much CPU as a small file's bytes)."""
            record = self.service.bound_file(xet_hash)
            start, end = parse_range(range_header, record.size, str(ark))
            if not wanted or start == end:
                return record.size, start, end, None, b""
            pieces = read_file(self.service.store, record, start, end)
            return record.size, start, end, pieces, _first(pieces)

        with _naming(ark):
            size, start, end, pieces, first = await self.run(opened)
        if unchanged:
            del headers["Accept-Ranges"]
            return Response(b"", status_code=304, headers=headers)
        headers["Content-Length"] = str(end - start)
        if entry.sha256 is not None:
            headers["Repr-Digest"] = f"sha-256=:{b64encode(entry.sha256).decode()}:"
        partial = range_header is not None
        if partial:
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{size}"
        media = mimetypes.guess_type(entry.name)[0] or "application/octet-stream"
        status = 206 if partial else 200
        if pieces is None:  # HEAD, or no bytes
            return Response(b"", status_code=status, headers=headers, media_type=media)
        if len(first) == end - start:  # one piece: a plain reply, no stream to keep going
            pieces.close()
            self.metrics.served.labels("file").inc(len(first))
            return Response(first, status_code=status, headers=headers, media_type=media)
        body = self._stream(first, pieces)
        return StreamingResponse(body, status_code=status, headers=headers, media_type=media)

    async def _verified(
        self,
        ark: Ark,
        pieces: Generator[bytes, None, None],
        status: int,
        headers: dict[str, str],
        media: str,
    ) -> Response:
        """A reply streaming pieces of verified bytes of ark. The first piece is read before
        the headers go out, so damage found there is a clean 500 naming ark."""
        with _naming(ark):
            first = await self.run(_first, pieces)
        body = self._stream(first, pieces)
        return StreamingResponse(body, status_code=status, headers=headers, media_type=media)

    async def _stream(
        self, first: bytes, pieces: Generator[bytes, None, None]
    ) -> AsyncIterator[bytes]:
        """Verified file bytes, one decoded xorb range per worker-thread call.

        Damage found after the headers went out can only cut the reply short: the error
        mapping (app.py) logs it, the connection is dropped, and the client sees an
        incomplete body.
        """
        served = self.metrics.served.labels("file")
        try:
            yield first
            served.inc(len(first))
            while (piece := await self.run(next, pieces, None)) is not None:
                yield piece
                served.inc(len(piece))
        finally:
            pieces.close()

    # --- binding -----------------------------------------------------------------------

    async def bind(self, request: Request) -> Response:
        """PUT: bind an archive, once the service has checked it against the store."""
        ark = _request_ark(request)
        self.auth.require_bind(request.headers.get("authorization"), ark.base)
        if ark.components or ark.variants:
            raise HttpError(400, f"bind archives at ark:NAAN/Name; {ark} names a part of one")
        # Spooled: a 1,000,000-file manifest is parsed from the file and copied to the store
        # from it, never held whole in memory besides its parse.
        with await spool_body(request, MAX_BIND_BODY, "bind request") as body:
            v = await self.run(self._bind, str(ark), body)
        log.info("bound %s v%d: %d files, %d bytes", ark, v.version, v.files, v.bytes)
        return JSONResponse({"ark": str(ark), **v.to_json()})

    def _bind(self, ark: str, body: BinaryIO) -> VersionInfo:
        """Bind ark to what a spooled bind body holds (blocking): a manifest, or the number
        of the version whose stored manifest to bind again (a metadata-only version)."""
        manifest, erc, message = _bind_parts(body)
        if isinstance(manifest, int):
            return self.service.bind_again(ark, manifest, erc, message)
        return self.service.bind(ark, manifest, erc, message).version


def _bind_parts(body: BinaryIO) -> tuple[FileSlice | int, str, str]:
    """Where the manifest is (or which version's to bind again), and the ERC text and
    message, of a spooled msgpack bind body; 400 if malformed."""
    try:
        obj = read_map(body, 0, body.seek(0, os.SEEK_END))
    except ValueError:
        obj = {}
    manifest, erc, message = obj.get("manifest"), obj.get("erc"), obj.get("message", "")
    again = obj.get("again")
    target: FileSlice | int | None = manifest if isinstance(manifest, FileSlice) else None
    if manifest is None and type(again) is int and again > 0:
        target = again
    if target is None or not isinstance(erc, str) or not isinstance(message, str):
        raise HttpError(
            400,
            'bind body must be msgpack {"manifest": <manifest bytes>, "erc": <ANVL text>, '
            '"message": <text, optional>}, or {"again": <version whose manifest to bind>, '
            '"erc": ..., "message": ...}',
        )
    return target, erc, message


def _first(pieces: Generator[bytes, None, None]) -> bytes:
    """The first of pieces (b"" if none); pieces is closed if reading it fails."""
    try:
        return next(pieces, b"")
    except BaseException:
        pieces.close()
        raise


@contextmanager
def _naming(ark: Ark) -> Iterator[None]:
    """Damage found while serving ark: the same StoreCorrupt, its message naming ark."""
    try:
        yield
    except StoreCorrupt as exc:
        raise StoreCorrupt(f"{ark}: {exc}") from None


def _request_ark(request: Request) -> Ark:
    """The ARK the request path spells, parsed from the raw (still %-escaped) path."""
    try:
        path = route_raw_path(request.scope)
    except UnicodeDecodeError:
        raise HttpError(400, "the request path holds raw non-ASCII bytes: %-encode them") from None
    try:
        return parse(path[1:])
    except ArkError as exc:
        raise HttpError(400, str(exc)) from None


def _literal_path(request: Request, past_version: bool) -> str:
    """The path after ark:NAAN/Name (and after its `@vN` if past_version) as the raw request
    path spells it, %-escapes decoded: the file names people type, whose hyphens
    normalization drops ('' if it spells none)."""
    raw = route_raw_path(request.scope)
    names = [
        unquote(c, errors="surrogateescape")
        for c in raw.partition(":")[2].lstrip("/").split("/")[2 + past_version :]
    ]
    if any(n in ("", ".", "..") or "/" in n or "\0" in n for n in names):
        return ""
    return "/".join(names)


def _nearest(manifest: Manifest, path: str) -> str:
    """The nearest directory above path that the manifest holds ('' the archive root)."""
    while path:
        path = path.rpartition("/")[0]
        if path and manifest.entry(path) is not None:
            return path
    return ""


def _attachment(filename: str) -> str:
    """A Content-Disposition that saves the reply as filename (RFC 6266): in UTF-8, and in
    ASCII (other characters as '_') for clients that read only that, such as `curl -J`.
    A byte of the name that is not UTF-8 is spelled %XX (filename_text)."""
    filename = filename_text(filename)
    plain = "".join(c if " " <= c <= "~" and c not in '"\\' else "_" for c in filename)
    return f"attachment; filename=\"{plain}\"; filename*=UTF-8''{quote(filename, safe='')}"


def _service_path(request: Request) -> str:
    """The resolver's service path: where appending a Compact ARK gives its URL."""
    return str(request.scope.get("root_path", "")) + "/"


def _choose(request: Request, offers: Sequence[str]) -> str:
    """The offer the request prefers: `format=json` or a citation format's name, then
    Accept (q, specificity, order)."""
    named = request.query_params.get("format")
    if named == "json" and JSON in offers:
        return JSON
    if named in citations.BY_NAME and citations.BY_NAME[named].media_type in offers:
        return citations.BY_NAME[named].media_type
    return negotiate(request.headers.get("accept"), offers)


def _entry_json(archive: Ark, e: Entry) -> dict[str, Any]:
    """One directory entry as JSON: the manifest fields plus its name and ARK."""
    return {"name": e.name, "ark": str(entry_ark(archive, e.path))} | e.to_json()
