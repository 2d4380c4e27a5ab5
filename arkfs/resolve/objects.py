"""ARKs that resolve to something other than an arkfs archive (a landing page, a PDF, any
HTTP object): their size, their blocks by HTTP Range, and the checks that keep them whole.

- stat: HEAD at the responder's URL gives the size (Content-Length), the ETag and a
  SHA-256 digest (Repr-Digest or Content-Digest, RFC 9530, `sha-256=:BASE64:`; or the
  older Digest, RFC 3230, `SHA-256=BASE64`), if the responder sends them.
- An object is read in blocks (block_span): one block when it holds up to WHOLE bytes,
  fetched whole by a plain GET and checked against its size and digest; else BLOCK-sized
  blocks, each one Range request carrying `If-Range: ETAG`. A changed object answers 200
  with the new representation instead of 206, which is refused (ObjectChanged), so a
  reader never gets a mix of two versions. The digest of a big object is checked by the
  caller, over its blocks in order.
- block_id names a block of one version of an object (URL, ETag, digest, index), and
  on_disk says whether its bytes are tied to that version well enough to be kept across
  time: the caches of arkfs.mount key blocks by it.

Every request goes to the one URL the chain ended at, with that origin's token only, and
under the retry rule of arkfs.backend.retry. Nothing is cached here.
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
from arkfs.backend.http import make_client, origin, raise_for_status, send
from arkfs.backend.retry import RetryPolicy
from arkfs.resolve.tokens import OriginTokens

WHOLE = 8 * 1024 * 1024  # objects up to this size are one block, fetched whole
BLOCK = 4 * 1024 * 1024  # a bigger one is read in blocks this size: one Range request each
READ_POLICY = RetryPolicy(deadline=10.0)
_SF_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*:([A-Za-z0-9+/=]+):", re.IGNORECASE)
_OLD_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*([A-Za-z0-9+/=]+)", re.IGNORECASE)


class ObjectChanged(BadReply):
    """The object changed between two reads (its ETag no longer matches)."""


class WrongDigest(BadReply):
    """An object's bytes do not match the SHA-256 digest its responder states."""


def sha256_of(headers: httpx.Headers) -> bytes | None:
    """The SHA-256 a reply's digest headers state for the whole representation, if any."""
    for name, pattern in (
        ("repr-digest", _SF_DIGEST),
        ("content-digest", _SF_DIGEST),
        ("digest", _OLD_DIGEST),
    ):
        match = pattern.search(headers.get(name, ""))
        if match:
            try:
                digest = base64.b64decode(match[1], validate=True)
            except ValueError:
                continue
            if len(digest) == 32:
                return digest
    return None


@dataclass(frozen=True)
class RemoteObject:
    """What an ARK resolved to, when that is not an arkfs archive."""

    ark: str
    url: str  # the responder's URL: the chain's end
    size: int
    etag: str | None
    sha256: bytes | None
    info: str | None  # the responder's ?info reply (ANVL ERC or JSON), if any

    @property
    def blocks(self) -> int:
        """How many blocks the object is read in."""
        return 1 if self.size <= WHOLE else -(-self.size // BLOCK)

    def block_span(self, index: int) -> tuple[int, int]:
        """Bytes [start, end) of block index."""
        if self.size <= WHOLE:
            return 0, self.size
        return index * BLOCK, min(self.size, (index + 1) * BLOCK)

    def block_of(self, offset: int) -> int:
        """The block holding byte offset."""
        return 0 if self.size <= WHOLE else offset // BLOCK

    def block_id(self, index: int) -> bytes:
        """A 32-byte name of block index of this version of the object: the BLAKE3 of
        its URL, ETag, digest and index, so another version never shares it."""
        parts = (self.url, self.etag or "", (self.sha256 or b"").hex(), str(index))
        return blake3.blake3("\0".join(parts).encode()).digest()

    @property
    def on_disk(self) -> bool:
        """May its blocks be kept across time (the disk cache)? Only when each block is
        known to belong to the version block_id names: fetched under If-Range with its
        (strong) ETag, or, for a one-block object, checked against its digest."""
        strong = self.etag is not None and not self.etag.startswith("W/")
        return strong or (self.sha256 is not None and self.blocks == 1)

    def to_json(self) -> dict[str, Any]:
        """The record as JSON-able values (for the mount's offline copy)."""
        sha = self.sha256.hex() if self.sha256 is not None else None
        return {**self.__dict__, "sha256": sha}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> "RemoteObject":
        """The record to_json gave; KeyError, TypeError or ValueError if malformed."""
        sha = obj["sha256"]
        return cls(
            str(obj["ark"]),
            str(obj["url"]),
            int(obj["size"]),
            None if obj["etag"] is None else str(obj["etag"]),
            None if sha is None else bytes.fromhex(sha),
            None if obj["info"] is None else str(obj["info"]),
        )


class ObjectReader:
    """stat RemoteObjects and fetch their blocks over one HTTP client (redirects are not
    followed: the object is the one at the chain's end)."""

    def __init__(self, tokens: OriginTokens, timeout: float = 10.0) -> None:
        self._tokens = tokens
        self._client = make_client(timeout)
        self._client.follow_redirects = False

    async def _get(self, url: str, headers: dict[str, str], method: str = "GET") -> httpx.Response:
        return await send(
            self._client,
            method,
            url,
            READ_POLICY,
            headers={**headers, **self._tokens.headers_for(url)},
        )

    async def stat(self, ark: str, url: str, info: str | None) -> RemoteObject:
        """The size, ETag and digest of the object at url (HEAD, else a GET of it whole)."""
        resp = await self._get(url, {}, "HEAD")
        if resp.status_code in (405, 501) or "content-length" not in resp.headers:
            resp = await self._get(url, {})
            raise_for_status(resp, f"object of {ark}")
            size = len(resp.content)
        else:
            raise_for_status(resp, f"object of {ark}")
            size = int(resp.headers["content-length"])
        return RemoteObject(ark, url, size, resp.headers.get("etag"), sha256_of(resp.headers), info)

    async def fetch_block(self, obj: RemoteObject, index: int) -> bytes:
        """Block index of obj, from its responder. Raises ObjectChanged, WrongDigest (a
        one-block object), BadReply (wrong size, no Range), or the request's BackendError."""
        if obj.blocks == 1:
            return await self._fetch_whole(obj)
        lo, end = obj.block_span(index)
        headers = {"Range": f"bytes={lo}-{end - 1}"}
        if obj.etag:
            headers["If-Range"] = obj.etag
        resp = await self._get(obj.url, headers)
        where = origin(obj.url)
        if resp.status_code == 200:
            if obj.etag and resp.headers.get("etag") != obj.etag:
                raise ObjectChanged(
                    f"{obj.ark} changed at {where} while it was read; open it again"
                )
            raise BadReply(f"{obj.ark}: {where} does not answer Range requests")
        raise_for_status(resp, f"object of {obj.ark}")
        data = resp.content
        if resp.status_code != 206 or len(data) != end - lo:
            raise BadReply(f"{obj.ark}: {where} sent {len(data)} bytes, not {end - lo}")
        return data

    async def _fetch_whole(self, obj: RemoteObject) -> bytes:
        resp = await self._get(obj.url, {})
        raise_for_status(resp, f"object of {obj.ark}")
        data, where = resp.content, origin(obj.url)
        if obj.etag and resp.headers.get("etag") not in (None, obj.etag):
            raise ObjectChanged(f"{obj.ark} changed at {where} since it was looked up")
        if len(data) != obj.size:
            raise BadReply(f"{obj.ark}: {where} sent {len(data)} bytes, not {obj.size}")
        if obj.sha256 is not None and await _sha256(data) != obj.sha256:
            raise WrongDigest(wrong_digest(obj))
        return data

    async def aclose(self) -> None:
        await self._client.aclose()


async def _sha256(data: bytes) -> bytes:
    """SHA-256 of data, in a worker thread (up to WHOLE bytes: too long for the trio one)."""
    return await trio.to_thread.run_sync(lambda: hashlib.sha256(data).digest())


def wrong_digest(obj: RemoteObject) -> str:
    """The one line that says obj's bytes failed its digest."""
    return f"{obj.ark}: the bytes from {origin(obj.url)} do not match its SHA-256 digest"
