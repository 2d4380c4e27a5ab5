"""ARKs that resolve to something other than an arkfs archive (a landing page, a PDF, any
HTTP object): their size, their blocks by HTTP Range, and the checks that keep them whole.

The one rule: a byte is served only from a reply that proves it is the asked part of the
representation the object was opened as.

- stat: HEAD at the responder's URL gives the claimed size (Content-Length), the ETag and
  a SHA-256 digest (Repr-Digest or Content-Digest, RFC 9530, `sha-256=:BASE64:`; or the
  older Digest, RFC 3230, `SHA-256=BASE64`), if the responder sends them. A responder
  that answers no HEAD (405, 501, no length) is asked `Range: bytes=0-0`: a 206 proves the
  size in its Content-Range; a 200 is counted through (never kept), up to WHOLE_MAX.
  A size stated only by a HEAD is a claim: every reply is checked against it.
- An object is read in blocks (block_span). One block, fetched whole by a plain GET, when
  it holds up to WHOLE bytes, or when it has no strong ETag (weak or none: nothing proves
  two ranges come from one representation, RFC 9110 "Weak versus Strong"), or when it
  has a digest and up to WHOLE_MAX bytes (checked before any byte is served); a whole
  read is refused past WHOLE_MAX. The whole body must be exactly the size and match the
  digest, if any. Else BLOCK-sized blocks, each one Range request under `If-Match: ETAG`
  (RFC 9110 "If-Match": a changed object answers 412). A 206 counts only with the
  Content-Range asked (first, last and complete length) and the same ETag (and digest,
  Last-Modified when stated); a 200 with the same validators is read as far as the
  block and dropped. Anything else is refused: ObjectChanged when a validator changed,
  so a reader never gets a mix of two versions. The digest of an object past WHOLE_MAX is
  checked by the caller, over its blocks in order.
- block_id names a block of one version of an object (URL, ETag, digest, index), and
  on_disk says whether its bytes are tied to that version well enough to be kept across
  time: the caches of arkfs.mount key blocks by it.

Every request goes to the one URL the chain ended at, with that origin's token only, and
under the retry rule of arkfs.net.retry. Bodies are streamed: no reply costs more
memory than the bytes kept of it. Nothing is cached here.
"""

import base64
import hashlib
import re
from dataclasses import dataclass
from typing import Any

import blake3
import httpx
import trio

from arkfs.backend.base import BadReply
from arkfs.net.bearer import OriginTokens
from arkfs.net.client import (
    MAX_ERROR_BODY,
    TooLarge,
    make_client,
    origin,
    raise_for_status,
    read_body,
    send,
    stream,
)
from arkfs.net.retry import RetryPolicy
from arkfs.util.sizes import human

WHOLE = 8 * 1024 * 1024  # objects up to this size are one block, fetched whole
WHOLE_MAX = 32 * 1024 * 1024  # the most of an object without a strong ETag read (whole)
BLOCK = 4 * 1024 * 1024  # a bigger one is read in blocks this size: one Range request each
READ_POLICY = RetryPolicy(deadline=10.0)
_SF_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*:([A-Za-z0-9+/=]+):", re.IGNORECASE)
_OLD_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*([A-Za-z0-9+/=]+)", re.IGNORECASE)
_CONTENT_RANGE = re.compile(r"bytes (\d+)-(\d+)/(\d+)")
_PLAIN = {"Accept-Encoding": "identity"}  # ranges and digests are of the bytes as stored


class ObjectChanged(BadReply):
    """The object changed between two reads (its ETag no longer matches)."""


class WrongDigest(BadReply):
    """An object's bytes do not match the SHA-256 digest its responder states."""


def sha256_of(headers: httpx.Headers, partial: bool = False) -> bytes | None:
    """The SHA-256 a reply's digest headers state for the whole representation, if any
    (of a 206, partial: its Content-Digest is of the part, RFC 9530 "Content-Digest")."""
    names = (("repr-digest", _SF_DIGEST), ("content-digest", _SF_DIGEST), ("digest", _OLD_DIGEST))
    for name, pattern in names:
        if partial and name == "content-digest":
            continue
        match = pattern.search(headers.get(name, ""))
        if match:
            try:
                digest = base64.b64decode(match[1], validate=True)
            except ValueError:
                continue
            if len(digest) == 32:
                return digest
    return None


def strong(etag: str | None) -> bool:
    """Whether an ETag is a strong validator (RFC 9110 "ETag")."""
    return etag is not None and not etag.startswith("W/")


def content_range(value: str | None) -> tuple[int, int, int] | None:
    """(first, last, complete length) of a Content-Range header, if it states all three."""
    match = _CONTENT_RANGE.fullmatch((value or "").strip())
    return None if match is None else (int(match[1]), int(match[2]), int(match[3]))


@dataclass(frozen=True)
class RemoteObject:
    """What an ARK resolved to, when that is not an arkfs archive."""

    ark: str
    url: str  # the responder's URL: the chain's end
    size: int
    etag: str | None
    sha256: bytes | None
    info: str | None  # the responder's ?info reply (ANVL ERC or JSON), if any
    modified: str | None = None  # its Last-Modified, if stated

    @property
    def whole(self) -> bool:
        """Is it read whole, in one GET: small, or no strong ETag to tie ranges together, or
        a digest that can judge it before any byte is served (up to WHOLE_MAX; past that,
        its blocks are served as they come and the digest judges after the last)?"""
        checked = self.sha256 is not None and self.size <= WHOLE_MAX
        return self.size <= WHOLE or not strong(self.etag) or checked

    @property
    def blocks(self) -> int:
        """How many blocks the object is read in."""
        return 1 if self.whole else -(-self.size // BLOCK)

    def block_span(self, index: int) -> tuple[int, int]:
        """Bytes [start, end) of block index."""
        if self.whole:
            return 0, self.size
        return index * BLOCK, min(self.size, (index + 1) * BLOCK)

    def block_of(self, offset: int) -> int:
        """The block holding byte offset."""
        return 0 if self.whole else offset // BLOCK

    def block_id(self, index: int) -> bytes:
        """A 32-byte name of block index of this version of the object: the BLAKE3 of
        its URL, ETag, digest, size and index, so another version never shares it."""
        sha = (self.sha256 or b"").hex()
        parts = (self.url, self.etag or "", sha, str(self.size), str(index))
        return blake3.blake3("\0".join(parts).encode()).digest()

    @property
    def on_disk(self) -> bool:
        """May its blocks be kept across time (the disk cache)? Only when each block is
        known to belong to the version block_id names: fetched under If-Match with its
        (strong) ETag, or, for a one-block object, checked against its digest."""
        return strong(self.etag) or (self.sha256 is not None and self.blocks == 1)

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able values (for the mount's offline copy)."""
        sha = self.sha256.hex() if self.sha256 is not None else None
        return {**self.__dict__, "sha256": sha}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "RemoteObject":
        """The record to_json gave; KeyError, TypeError or ValueError if malformed."""
        sha, modified = obj["sha256"], obj.get("modified")
        return cls(
            str(obj["ark"]),
            str(obj["url"]),
            int(obj["size"]),
            None if obj["etag"] is None else str(obj["etag"]),
            None if sha is None else bytes.fromhex(sha),
            None if obj["info"] is None else str(obj["info"]),
            None if modified is None else str(modified),
        )


class ObjectReader:
    """stat RemoteObjects and fetch their blocks over one HTTP client (redirects are not
    followed: the object is the one at the chain's end)."""

    def __init__(self, tokens: OriginTokens, timeout: float = 10.0) -> None:
        self._tokens = tokens
        self._client = make_client(timeout)
        self._client.follow_redirects = False

    def _headers(self, url: str, headers: dict[str, str]) -> dict[str, str]:
        return {**_PLAIN, **headers, **self._tokens.headers_for(url)}

    async def stat(self, ark: str, url: str, info: str | None) -> RemoteObject:
        """The size, ETag and digest of the object at url (HEAD, else a GET of byte 0)."""
        what = f"object of {ark}"
        resp = await send(self._client, "HEAD", url, READ_POLICY, headers=self._headers(url, {}))
        length = resp.headers.get("content-length", "")
        if resp.status_code not in (405, 501) and length.isdigit():
            raise_for_status(resp, what)
            return _record(ark, url, int(length), resp.headers, info)
        headers = self._headers(url, {"Range": "bytes=0-0"})
        async with stream(self._client, "GET", url, READ_POLICY, headers=headers) as resp:
            await _refuse_errors(resp, what)
            proved = content_range(resp.headers.get("content-range"))
            if resp.status_code == 206 and proved is not None:
                return _record(ark, url, proved[2], resp.headers, info, partial=True)
            if resp.status_code != 200:
                raise BadReply(f"{what}: {origin(url)} answered HTTP {resp.status_code}")
            size = 0  # counted, not kept: nothing short of the body proves a length
            async for piece in resp.aiter_bytes():
                size += len(piece)
                if size > WHOLE_MAX:
                    raise TooLarge(
                        f"{what}: {origin(url)} answers neither HEAD nor Range, and the "
                        f"object is larger than {human(WHOLE_MAX)}, the most read whole"
                    )
            return _record(ark, url, size, resp.headers, info)

    async def fetch_block(self, obj: RemoteObject, index: int) -> bytes:
        """Block index of obj, from its responder. Raises ObjectChanged, WrongDigest (a
        one-block object), BadReply (wrong size or range, too big), or the request's
        BackendError."""
        if obj.whole:
            return await self._fetch_whole(obj)
        lo, end = obj.block_span(index)
        headers = self._headers(obj.url, {"Range": f"bytes={lo}-{end - 1}"})
        assert obj.etag is not None  # strong: whole otherwise
        headers["If-Match"] = obj.etag
        what, where = f"object of {obj.ark}", origin(obj.url)
        async with stream(self._client, "GET", obj.url, READ_POLICY, headers=headers) as resp:
            if resp.status_code == 412:
                raise ObjectChanged(_changed(obj))
            await _refuse_errors(resp, what)
            _same_version(obj, resp)
            if resp.status_code == 200:  # Range ignored: read up to the block, then drop
                return await _slice(resp, lo, end, what)
            if resp.status_code != 206:
                raise BadReply(f"{what}: {where} answered HTTP {resp.status_code} to a range")
            proved = content_range(resp.headers.get("content-range"))
            if proved != (lo, end - 1, obj.size):
                raise BadReply(
                    f"{what}: {where} sent range {resp.headers.get('content-range')!r} "
                    f"for bytes {lo}-{end - 1}/{obj.size}"
                )
            data = await read_body(resp, end - lo, what)
        if len(data) != end - lo:
            raise BadReply(f"{what}: {where} sent {len(data)} bytes, not {end - lo}")
        return data

    async def _fetch_whole(self, obj: RemoteObject) -> bytes:
        what, where = f"object of {obj.ark}", origin(obj.url)
        if obj.size > WHOLE_MAX:
            raise TooLarge(
                f"{what}: {where} gives it no strong ETag, so it can only be read whole, "
                f"and it is larger than {human(WHOLE_MAX)}, the most read whole"
            )
        headers = self._headers(obj.url, {})
        async with stream(self._client, "GET", obj.url, READ_POLICY, headers=headers) as resp:
            await _refuse_errors(resp, what)
            if resp.status_code != 200:
                raise BadReply(f"{what}: {where} answered HTTP {resp.status_code} to a GET")
            _same_version(obj, resp)
            try:
                data = await read_body(resp, obj.size, what)
            except TooLarge:
                raise BadReply(f"{what}: {where} sent more than its {obj.size} bytes") from None
        if len(data) != obj.size:
            raise BadReply(f"{what}: {where} sent {len(data)} bytes, not {obj.size}")
        if obj.sha256 is not None and await _sha256(data) != obj.sha256:
            raise WrongDigest(wrong_digest(obj))
        return data

    async def aclose(self) -> None:
        await self._client.aclose()


def _record(
    ark: str, url: str, size: int, headers: httpx.Headers, info: str | None, partial: bool = False
) -> RemoteObject:
    etag, modified = headers.get("etag"), headers.get("last-modified")
    return RemoteObject(ark, url, size, etag, sha256_of(headers, partial), info, modified)


async def _refuse_errors(resp: httpx.Response, what: str) -> None:
    """raise_for_status for a streamed reply (its message read from a bounded body)."""
    if not 200 <= resp.status_code < 300:
        await read_body(resp, MAX_ERROR_BODY, what, cut=True)
        raise_for_status(resp, what)


def _same_version(obj: RemoteObject, resp: httpx.Response) -> None:
    """ObjectChanged unless a reply's validators (ETag, digest, Last-Modified), where it
    states them, are obj's: the ETag must be there if obj has one."""
    headers = resp.headers
    stated = sha256_of(headers, partial=resp.status_code == 206)
    modified = headers.get("last-modified")
    etag_changed = obj.etag is not None and headers.get("etag") != obj.etag
    digest_changed = None not in (stated, obj.sha256) and stated != obj.sha256
    date_changed = None not in (modified, obj.modified) and modified != obj.modified
    if etag_changed or digest_changed or date_changed:
        raise ObjectChanged(_changed(obj))


async def _slice(resp: httpx.Response, lo: int, end: int, what: str) -> bytes:
    """Bytes [lo, end) of a 200 reply's body, those before lo read and dropped."""
    at, kept = 0, bytearray()
    async for piece in resp.aiter_bytes():
        if at + len(piece) > lo:
            kept += piece[max(0, lo - at) : end - at]
        at += len(piece)
        if at >= end:
            break
    if len(kept) != end - lo:
        raise BadReply(f"{what}: {origin(str(resp.request.url))} ended at byte {at}, before {end}")
    return bytes(kept)


def _changed(obj: RemoteObject) -> str:
    return f"{obj.ark} changed at {origin(obj.url)} while it was read; open it again"


async def _sha256(data: bytes) -> bytes:
    """SHA-256 of data, in a worker thread (up to WHOLE_MAX bytes: too long for the trio one)."""
    return await trio.to_thread.run_sync(lambda: hashlib.sha256(data).digest())


def wrong_digest(obj: RemoteObject) -> str:
    """The one line that says obj's bytes failed its digest."""
    return f"{obj.ark}: the bytes from {origin(obj.url)} do not match its SHA-256 digest"
