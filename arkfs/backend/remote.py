"""RemoteBackend: `arkfs serve` (an NMA with a XET CAS) over HTTP, with httpx on trio.

The NMA half (manifests, ERC records, versions, bindings) is asked with the user's token.
An archive is read as its JSON `?info` (the ERC record and which version it is; at the
root also every version), then the manifest of exactly that version (`.../@vN`), so an
archive is never the manifest of one version with the ERC of another. CAS calls
carry a short-lived token from `GET {base}/v1/token/{read|write}` and go to the casUrl it
names; the token is renewed a minute before it expires, and once on a 401. A server without
that route (404) takes the user's token directly on its own base URL. Fetch URLs are signed
and get no Authorization header. Tokens live in private fields only: no repr or message
shows one.
"""

import math
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import httpx
import msgpack
import trio

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.archive.withdrawal import as_withdrawn, withdrawal_in
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ErcError, ManifestError, VersionError
from arkfs.ark.identifier import Ark
from arkfs.ark.normalization import parse
from arkfs.ark.version_qualifier import versioned
from arkfs.backend.base import BadReply, NotBound, Refused, Unauthorized
from arkfs.net.bearer import bearer
from arkfs.net.client import (
    Body,
    Pieces,
    json_reply,
    make_client,
    media_type,
    msgpack_reply,
    origin,
    raise_for_status,
    send,
    server_message,
)
from arkfs.net.ranged import RangedGetter, RangedReply
from arkfs.net.reachability import DOWN_WINDOW
from arkfs.net.retry import DownOrigins, RetryPolicy, retry_after
from arkfs.util.msgpack_file import bin_header
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import (
    BINARY_TYPE,
    FOOTERS_HEADER,
    FOOTERS_HELD_HEADER,
    FetchRange,
    Reconstruction,
    held_header,
    parse_batch,
)
from arkfs.xet.shard import Shard, parse_shard
from arkfs.xet.trust import named_footer
from arkfs.xet.xorb import MAX_FOOTER_TAIL, XorbFooter

T = TypeVar("T")
MANIFEST_TYPE = "application/vnd.arkfs.manifest+msgpack"
# The first suffix asked for a footer: it holds the footer of a xorb of up to ~1,600 chunks
# (a full xorb of 64 KiB chunks has ~1,000); a bigger footer takes a second, exact request.
FOOTER_GUESS = 64 * 1024
TOKEN_MARGIN = 60.0  # renew a CAS token this long before it expires
FETCH_THREADS = 8  # worker threads receiving xorb ranges at once
BIND_ENTRIES_PER_SECOND = 10_000  # a bind's reply may take 1 s more per this many entries
READ, WRITE = "read", "write"
SHARD_STALL = 120.0  # seconds a shard's check at the server may show no progress


@dataclass
class _CasAccess:
    """Where CAS calls go and the token they carry, until refresh_at (Unix time)."""

    url: str
    token: str | None = field(repr=False)
    refresh_at: float
    renewable: bool  # from the token route, so a 401 is worth one renewal


def _content_range(header: str | None) -> tuple[int, int, int] | None:
    """(first, last, size) of a `Content-Range: bytes first-last/size` header, or None."""
    if not header or not header.startswith("bytes "):
        return None
    span, _, size = header[len("bytes ") :].partition("/")
    first, _, last = span.partition("-")
    if not (first.isdigit() and last.isdigit() and size.isdigit()):
        return None
    return int(first), int(last), int(size)


class RemoteBackend:
    """The archive side behind an HTTP base URL.

    A request is retried up to retries times (see arkfs.net.retry); timeout bounds each
    connect, send and receive. retry_time is the deadline of every read (a GET, fetches
    included): it has a complete answer by then, retries and the wait for a fetch thread
    included, or fails with Unreachable. Uploads and binds have no deadline, as a large
    upload that keeps moving must finish: only timeout and retries bound them. For
    fail_fast seconds after a request found an origin unreachable, requests to it fail at
    once.

    The defaults fit the mount: a read(2) on a stuck server fails in about 10 s, one on a
    server that refuses connections in about 2 s (the pauses of 4 attempts), one on a host
    that drops packets in about 6.5 s (two connects of 3 s), and the kernel's retry of the
    failed readahead then makes a single attempt (DownOrigins); a range of at most 8 MiB
    arrives in 10 s from any server that sends 1 MB/s or more.
    """

    def __init__(
        self,
        base_url: str,
        token: str | None,
        *,
        retries: int = 3,
        timeout: float = 10.0,
        retry_time: float = 10.0,
        fail_fast: float = DOWN_WINDOW,
    ) -> None:
        if retries < 0 or timeout <= 0:
            raise ValueError(f"retries must be >= 0 and timeout > 0, got {retries} and {timeout}")
        self.name = base_url.rstrip("/")
        self.bytes_fetched = 0  # bytes of every reply body, for statistics
        self._token = token
        self._reads = RetryPolicy(attempts=retries + 1, deadline=retry_time)
        self._writes = replace(self._reads, deadline=math.inf)
        self._timeout = timeout
        self._client = make_client(timeout)
        self._ranged = RangedGetter(timeout, self._reads)
        self._fetch_threads = trio.CapacityLimiter(FETCH_THREADS)
        self._down = DownOrigins(fail_fast)  # one attempt at a time while an origin is down
        self._access: dict[str, _CasAccess] = {}
        self._access_lock = trio.Lock()
        self._v2 = True  # until the CAS shows it has no /v2/reconstructions
        self._batch = True  # until the CAS shows it has no batch route

    def __repr__(self) -> str:
        return f"RemoteBackend({self.name!r})"

    async def _send(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: Body | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        policy = self._reads if method == "GET" else self._writes
        async with self._down.request(origin(url), policy) as policy:
            resp = await send(
                self._client, method, url, policy, headers=headers, content=content, timeout=timeout
            )
        self.bytes_fetched += len(resp.content)
        return resp

    async def _nma(
        self,
        method: str,
        url: str,
        headers: dict[str, str],
        content: Body | None = None,
        timeout: float | None = None,
    ) -> httpx.Response:
        """A request to the NMA, with the user's token."""
        auth = {**headers, **bearer(self._token)}
        return await self._send(method, url, auth, content, timeout)

    # --- CAS tokens ------------------------------------------------------------------------

    async def _cas_access(self, scope: str) -> _CasAccess:
        async with self._access_lock:
            access = self._access.get(scope)
            if access is None or time.time() >= access.refresh_at:
                access = self._access[scope] = await self._new_access(scope)
            return access

    async def _new_access(self, scope: str) -> _CasAccess:
        """Ask the token route for a CAS token; without one, use the user's token on base."""
        what = f"CAS {scope} token"
        resp = await self._send("GET", f"{self.name}/v1/token/{scope}", bearer(self._token))
        if resp.status_code == 404:
            return _CasAccess(self.name, self._token, math.inf, renewable=False)
        raise_for_status(resp, what)
        obj = json_reply(resp, what)
        token, exp, cas_url = obj.get("accessToken"), obj.get("exp"), obj.get("casUrl")
        if not (
            isinstance(token, str)
            and token
            and isinstance(exp, int | float)
            and not isinstance(exp, bool)
            and isinstance(cas_url, str)
            and cas_url
        ):
            raise BadReply(f"{what}: {self.name} did not send accessToken, exp and casUrl")
        margin = min(TOKEN_MARGIN, max(exp - time.time(), 0.0) / 2)
        url = str(httpx.URL(self.name + "/").join(cas_url)).rstrip("/")
        return _CasAccess(url, token, exp - margin, renewable=True)

    async def _cas(
        self,
        method: str,
        path: str,
        scope: str,
        headers: dict[str, str] | None = None,
        content: bytes | None = None,
    ) -> httpx.Response:
        """A CAS request with a CAS token; a 401 renews a renewable token once."""
        for _ in range(2):
            access = await self._cas_access(scope)
            resp = await self._send(
                method, access.url + path, {**(headers or {}), **bearer(access.token)}, content
            )
            if resp.status_code != 401 or not access.renewable:
                break
            if self._access.get(scope) is access:
                del self._access[scope]
        return resp

    # --- NMA -------------------------------------------------------------------------------

    async def _info(self, ark: Ark) -> dict[str, Any]:
        """The JSON `?info` record of ark (an archive root, or a version of one)."""
        what = f"ERC record of {ark}"
        resp = await self._nma("GET", f"{self.name}/{ark}?info", {"Accept": "application/json"})
        if resp.status_code == 404:  # the server says which: no archive, or no such version
            raise NotBound(f"{server_message(resp)} ({self.name})")
        raise_for_status(resp, what)
        obj = json_reply(resp, what)
        if obj.get("ark") != str(ark):
            raise BadReply(f"{self.name} answered {ark}?info about {obj.get('ark')!r}")
        return obj

    def _version(self, ark: str, obj: object) -> VersionInfo:
        try:
            return VersionInfo.from_json(ark, obj)
        except VersionError as exc:
            raise BadReply(f"{self.name}: {exc}") from None

    async def versions(self, ark: str) -> list[VersionInfo]:
        """The `versions` of the archive root's JSON `?info`."""
        listed = (await self._info(parse(ark))).get("versions")
        if not isinstance(listed, list) or not listed:
            raise BadReply(f"{self.name} listed no versions in {ark}?info; is it an arkfs server?")
        return [self._version(ark, v) for v in listed]

    async def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        """The version and ERC record of the archive root's JSON `?info`: one request."""
        return await self._record(ark, None)

    async def _record(self, ark: str, version: int | None) -> tuple[VersionInfo, Erc]:
        """The version and ERC record (`?info`, JSON) of ark or of its `@vN`."""
        info = await self._info(versioned(parse(ark), version))
        found = self._version(ark, info.get("version"))
        if version is not None and found.version != version:
            raise BadReply(f"{self.name} answered version {found.version} of {ark}, not {version}")
        try:
            return found, Erc.from_json(info.get("erc"))
        except ErcError as exc:
            raise BadReply(f"ERC record of {ark} from {self.name}: {exc}") from None

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        """The ERC record and version (`?info`, JSON) of ark or of its `@vN`, then the
        manifest (msgpack) of exactly that version, so the three always agree."""
        found, erc = await self._record(ark, version)
        exact = versioned(parse(ark), found.version)
        what = f"manifest of {exact}"
        resp = await self._nma("GET", f"{self.name}/{exact}", {"Accept": MANIFEST_TYPE})
        if resp.status_code == 404:
            raise NotBound(f"{server_message(resp)} ({self.name})")
        if resp.status_code == 410:  # withdrawn, if its ?info says so (and why)
            withdrawn = withdrawal_in(erc, found.version)
            if withdrawn is not None:
                empty = Archive(Manifest(ark, [], found.created), erc, found)
                return as_withdrawn(empty, withdrawn)
        raise_for_status(resp, what)
        kind = media_type(resp)
        if kind != MANIFEST_TYPE:
            raise BadReply(
                f"{what}: {self.name} answered with {kind or 'no content type'}, "
                f"not {MANIFEST_TYPE}; is it an arkfs server?"
            )
        try:
            manifest = await trio.to_thread.run_sync(Manifest.from_msgpack, resp.content)
        except ManifestError as exc:
            raise BadReply(f"{what} from {self.name}: {exc}") from None
        if manifest.ark != ark:
            raise BadReply(f"{self.name} answered {exact} with the manifest of {manifest.ark}")
        return Archive(manifest, erc, found)

    async def list_archives(self, prefix: str = "") -> list[str]:
        url = str(httpx.URL(f"{self.name}/arks", params={"prefix": prefix}))
        resp = await self._nma("GET", url, {"Accept": "application/json"})
        raise_for_status(resp, "list of archives")
        arks = json_reply(resp, "list of archives").get("arks")
        if not (isinstance(arks, list) and all(isinstance(a, str) for a in arks)):
            raise BadReply(f"list of archives: {self.name} sent no list of ARK strings")
        return arks

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        """PUT the manifest, ERC record and message; the server checks the files are in its
        CAS, and answers with the new version."""
        body = _bind_body(manifest, erc, message)
        # The server checks every file before it answers: 1,000,000 take it tens of seconds.
        wait = self._timeout + len(manifest.entries) / BIND_ENTRIES_PER_SECOND
        return await self._put_binding(manifest.ark, body, wait)

    async def bind_again(self, ark: str, version: int, erc: Erc, message: str = "") -> VersionInfo:
        """PUT the version whose manifest to bind again, the ERC record and message: no
        manifest travels, and the server parses none."""
        packer = msgpack.Packer(use_bin_type=True)
        body = packer.pack({"again": version, "erc": erc.to_anvl(), "message": message})
        return await self._put_binding(ark, body)

    async def _put_binding(self, ark: str, body: Body, wait: float | None = None) -> VersionInfo:
        """PUT a bind body (msgpack) for ark (wait: seconds, None the usual timeout); the
        version it bound."""
        what = f"binding of {ark}"
        headers = {"Content-Type": "application/msgpack"}
        resp = await self._nma("PUT", f"{self.name}/{ark}", headers, body, wait)
        raise_for_status(resp, what)
        return self._version(ark, json_reply(resp, what))

    # --- CAS reads -------------------------------------------------------------------------

    async def _reconstruction_reply(
        self, name: str, headers: dict[str, str] | None
    ) -> httpx.Response:
        """/v2/reconstructions, falling back to /v1 on 404 or 501 as hf_xet does."""
        if self._v2:
            resp = await self._cas("GET", f"/v2/reconstructions/{name}", READ, headers)
            if resp.status_code not in (404, 501):
                return resp
        resp = await self._cas("GET", f"/v1/reconstructions/{name}", READ, headers)
        if self._v2 and resp.is_success:
            self._v2 = False  # v1 knows a file v2 did not: this CAS has no v2
        return resp

    def _parse_reconstruction(
        self, resp: httpx.Response, what: str, parse: Callable[[object], T]
    ) -> T:
        """parse() of a reconstruction reply, msgpack (BINARY_TYPE) or JSON."""
        try:
            if media_type(resp) == BINARY_TYPE:
                return parse(msgpack_reply(resp, what))
            return parse(json_reply(resp, what))
        except XetError as exc:
            raise BadReply(f"{what} from {origin(str(resp.request.url))}: {exc}") from None

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        name = hash_to_string(file_hash)
        what = f"reconstruction of file {name}"
        headers = {
            "Range": f"bytes={start}-{end - 1}",
            FOOTERS_HEADER: "1",
            "Accept": f"{BINARY_TYPE}, application/json;q=0.9",  # JSON from other CASes
        }
        if held:
            headers[FOOTERS_HELD_HEADER] = held_header(held)
        resp = await self._reconstruction_reply(name, headers)
        where = origin(str(resp.request.url))
        if resp.status_code == 404:
            raise NotBound(f"the CAS at {where} holds no file {name}")
        if resp.status_code == 416:
            raise Refused(f"bytes {start}..{end} of file {name} are past its end ({where})")
        raise_for_status(resp, what)
        rec = self._parse_reconstruction(resp, what, Reconstruction.from_json)
        if not rec.terms:
            raise BadReply(f"{what}: {where} sent no terms for bytes {start}..{end}")
        return rec

    async def reconstructions(
        self, file_hashes: Sequence[bytes], held: Collection[bytes] = ()
    ) -> dict[bytes, Reconstruction]:
        if not self._batch or not file_hashes:
            return {}
        what = f"reconstructions of {len(file_hashes)} files"
        query = "&".join(f"file_id={hash_to_string(fh)}" for fh in file_hashes)
        headers = {FOOTERS_HEADER: "1", "Accept": f"{BINARY_TYPE}, application/json;q=0.9"}
        if held:
            headers[FOOTERS_HELD_HEADER] = held_header(held)
        resp = await self._cas("GET", f"/v1/reconstructions?{query}", READ, headers)
        if resp.status_code in (400, 404, 405, 501):  # no batch route here: ask file by file
            self._batch = False
            return {}
        raise_for_status(resp, what)
        recs = self._parse_reconstruction(resp, what, parse_batch)
        asked = set(file_hashes)
        return {fh: rec for fh, rec in recs.items() if fh in asked}

    async def _signed_get(self, url: str, range_header: str, what: str) -> RangedReply:
        """GET a signed xorb URL in a worker thread (arkfs.net.ranged explains why),
        complete by the read deadline, counted from now: waiting for a thread counts too.

        A refused URL means it expired (Unauthorized: the caller asks for a new
        reconstruction); any other status but 200 or 206 is a bad reply.
        """
        deadline = time.monotonic() + self._reads.deadline
        async with self._down.request(origin(url), self._reads) as policy:
            reply = await trio.to_thread.run_sync(
                self._ranged.get,
                url,
                range_header,
                deadline,
                policy,
                limiter=self._fetch_threads,
                abandon_on_cancel=True,
            )
        self.bytes_fetched += len(reply.body)
        if reply.status in (401, 403):
            raise Unauthorized(
                f"{what}: {origin(url)} refused the fetch URL ({reply.message}); "
                "the fetch URL expired: ask for a new reconstruction"
            )
        if reply.status not in (200, 206):
            raise BadReply(
                f"{what}: {origin(url)} answered HTTP {reply.status} to a URL of a "
                f"reconstruction ({reply.message})"
            )
        return reply

    async def fetch(self, xorb_hash: bytes, fr: FetchRange) -> bytes:
        want = fr.byte_end - fr.byte_start + 1
        what = f"xorb {hash_to_string(xorb_hash)} bytes {fr.byte_start}..{fr.byte_end}"
        reply = await self._signed_get(fr.url, f"bytes={fr.byte_start}-{fr.byte_end}", what)
        data = reply.body
        if reply.status == 200:  # the whole xorb: the server ignored Range
            data = data[fr.byte_start : fr.byte_end + 1]
        if len(data) != want:
            raise BadReply(
                f"{what}: {origin(fr.url)} sent {len(data)} bytes, not {want} (HTTP {reply.status})"
            )
        return data

    async def _tail(self, fr: FetchRange, length: int, what: str) -> tuple[bytes, int]:
        """The last length bytes of a xorb (all of it if shorter) and the xorb's size."""
        reply = await self._signed_get(fr.url, f"bytes=-{length}", what)
        tail = reply.body
        if reply.status != 206:
            return tail, len(tail)
        span = _content_range(reply.content_range)
        if span is None or span[1] + 1 != span[2] or span[1] - span[0] + 1 != len(tail):
            raise BadReply(
                f"{what}: {origin(fr.url)} sent {len(tail)} bytes that are not the xorb's end "
                f"(Content-Range {reply.content_range!r})"
            )
        return tail, span[2]

    async def footer(self, xorb_hash: bytes, fr: FetchRange) -> XorbFooter:
        """The footer, from a suffix of the xorb: FOOTER_GUESS bytes first, then, if the
        footer's length (the xorb's last 4 bytes) says it is longer, exactly that many.

        The xorb's size, which parse_footer needs, comes from Content-Range.
        """
        name = hash_to_string(xorb_hash)
        what = f"footer of xorb {name}"
        tail, size = await self._tail(fr, FOOTER_GUESS, what)
        if len(tail) < size and len(tail) >= 4:
            need = int.from_bytes(tail[-4:], "little") + 4
            if len(tail) < need <= MAX_FOOTER_TAIL:
                tail, size = await self._tail(fr, need, what)
        try:
            return named_footer(tail, size, xorb_hash)
        except XetError as exc:
            raise BadReply(f"{what} from {origin(fr.url)}: {exc}") from None

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        """Probe v1 reconstructions, which every CAS has.

        Terms do not state a file's size, so two probes decide it: byte size-1 must exist
        and byte size must be past the end (416). An empty file has no byte to probe: a
        request without Range must answer with no terms.
        """
        name = hash_to_string(file_hash)
        what = f"lookup of file {name}"
        path = f"/v1/reconstructions/{name}"
        if size == 0:
            resp = await self._cas("GET", path, READ)
            if resp.status_code == 404:
                return False
            raise_for_status(resp, what)
            return not self._parse_reconstruction(resp, what, Reconstruction.from_json).terms
        last = await self._cas("GET", path, READ, {"Range": f"bytes={size - 1}-{size - 1}"})
        if last.status_code in (404, 416):
            return False
        raise_for_status(last, what)
        past = await self._cas("GET", path, READ, {"Range": f"bytes={size}-{size}"})
        if past.status_code == 416:
            return True
        raise_for_status(past, what)
        return False

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        name = hash_to_string(chunk_hash)
        resp = await self._cas("GET", f"/v1/chunks/default/{name}", READ)
        if resp.status_code == 404:
            return None
        raise_for_status(resp, f"dedup query of chunk {name}")
        try:
            return await trio.to_thread.run_sync(parse_shard, resp.content)
        except XetError as exc:
            raise BadReply(f"dedup query of chunk {name}: {exc}") from None

    # --- CAS writes ------------------------------------------------------------------------

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        what = f"upload of xorb {hash_to_string(xorb_hash)}"
        resp = await self._cas(
            "POST",
            f"/v1/xorbs/default/{hash_to_string(xorb_hash)}",
            WRITE,
            {"Content-Type": "application/octet-stream"},
            data,
        )
        raise_for_status(resp, what)
        inserted = json_reply(resp, what).get("was_inserted")
        if not isinstance(inserted, bool):
            raise BadReply(f"{what}: {origin(str(resp.request.url))} sent no was_inserted flag")
        return inserted

    async def upload_shard(self, data: bytes) -> bool:
        what = "upload of a shard"
        # A server whose check of the shard outlasts a few seconds answers 202 and where
        # to poll (RFC 7240 respond-async): waiting on it is bounded by its progress, not
        # by a timeout whose retries would start the same check again.
        post = (
            "POST",
            "/v1/shards",
            WRITE,
            {"Content-Type": "application/octet-stream", "Prefer": "respond-async, wait=5"},
            data,
        )
        resp = await self._cas(*post)
        checked: object = None
        since = trio.current_time()
        while resp.status_code == 202:
            obj = json_reply(resp, what)
            if obj.get("checked") != checked:
                checked, since = obj.get("checked"), trio.current_time()
            elif trio.current_time() - since > SHARD_STALL:
                raise BadReply(
                    f"{what}: {self.name} checked no file of it for {SHARD_STALL:g} s; "
                    "see the server's log"
                )
            await trio.sleep(retry_after(resp.headers.get("retry-after")) or 1.0)
            location = resp.headers.get("location", "")
            if not location.startswith("/v1/"):
                raise BadReply(f"{what}: {self.name} answered 202 without where to poll")
            resp = await self._cas("GET", location, WRITE)
            if resp.status_code == 404:  # the intake is gone (a restart): send it again
                resp = await self._cas(*post)
        raise_for_status(resp, what)
        result = json_reply(resp, what).get("result")
        if result not in (0, 1) or isinstance(result, bool):
            raise BadReply(f"{what}: {origin(str(resp.request.url))} sent no result 0 or 1")
        return bool(result == 1)

    async def aclose(self) -> None:
        await self._client.aclose()


def _bind_body(manifest: Manifest, erc: Erc, message: str) -> Pieces:
    """The msgpack map {manifest, erc, message} of a bind, sent from the manifest's pieces:
    no copy of a 1M-entry manifest (~100 MB), where to_msgpack then packb of it made two."""
    pieces = manifest.msgpack_pieces()
    packer = msgpack.Packer(use_bin_type=True)
    head = packer.pack_map_header(3) + packer.pack("manifest")
    head += bin_header(sum(len(p) for p in pieces))
    tail = packer.pack("erc") + packer.pack(erc.to_anvl())
    tail += packer.pack("message") + packer.pack(message)
    return Pieces([head, *pieces, tail])
