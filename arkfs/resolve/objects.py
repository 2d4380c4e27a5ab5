"""ARKs that resolve to something other than an arkfs archive (a landing page, a PDF, any
HTTP object): their size, their bytes by HTTP Range, and the checks that keep them whole.

- stat: HEAD at the responder's URL gives the size (Content-Length), the ETag and a
  SHA-256 digest (Repr-Digest or Content-Digest, RFC 9530, `sha-256=:BASE64:`; or the
  older Digest, RFC 3230, `SHA-256=BASE64`), if the responder sends them.
- An object of up to WHOLE bytes is fetched whole, once, checked against its size and
  digest, and kept in memory (up to MEMORY bytes of such objects).
- A bigger one is read in BLOCK-sized Range requests carrying `If-Range: ETAG`, the
  blocks kept in the same memory (so sequential reads ask once per block): a changed
  object answers 200 with the new representation instead of 206, which is refused
  (ObjectChanged), so a reader never gets a mix of two versions. Its digest cannot be
  checked piecewise.

Every request goes to the one URL the chain ended at, with that origin's token only, and
under the retry rule of arkfs.backend.retry.
"""

import base64
import hashlib
import re
from dataclasses import dataclass

import httpx

from arkfs.backend.base import BadReply
from arkfs.backend.http import make_client, origin, raise_for_status, send
from arkfs.backend.retry import RetryPolicy
from arkfs.resolve.tokens import OriginTokens
from arkfs.util.lru import LRU

WHOLE = 8 * 1024 * 1024  # objects up to this size are fetched whole and digest-checked
BLOCK = 4 * 1024 * 1024  # a bigger one is read in blocks this size: one Range request each
MEMORY = 64 * 1024 * 1024  # bytes of whole objects and blocks kept in memory
READ_POLICY = RetryPolicy(deadline=10.0)
_SF_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*:([A-Za-z0-9+/=]+):", re.IGNORECASE)
_OLD_DIGEST = re.compile(r"(?:^|,)\s*sha-256\s*=\s*([A-Za-z0-9+/=]+)", re.IGNORECASE)


class ObjectChanged(BadReply):
    """The object changed between two reads (its ETag no longer matches)."""


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


class ObjectReader:
    """stat and read RemoteObjects over one HTTP client (redirects are not followed: the
    object is the one at the chain's end)."""

    def __init__(self, tokens: OriginTokens, timeout: float = 10.0) -> None:
        self._tokens = tokens
        self._client = make_client(timeout)
        self._client.follow_redirects = False
        self._memory: LRU[str, bytes] = LRU(MEMORY)  # whole objects and blocks of big ones

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

    async def read(self, obj: RemoteObject, off: int, size: int) -> bytes:
        """Bytes [off, off+size) of obj (fewer at its end). Raises ObjectChanged, BadReply
        (wrong size or digest), or the request's BackendError."""
        size = min(size, obj.size - off)
        if size <= 0:
            return b""
        if obj.size <= WHOLE:
            return (await self._read_whole(obj))[off : off + size]
        first, last = off // BLOCK, (off + size - 1) // BLOCK
        blocks = [await self._block(obj, i) for i in range(first, last + 1)]
        start = off - first * BLOCK
        return b"".join(blocks)[start : start + size]

    async def _block(self, obj: RemoteObject, index: int) -> bytes:
        """Block index of a big object, from memory or by one Range request."""
        key = f"{obj.url} {obj.etag} {index}"
        data = self._memory.get(key)
        if data is not None:
            return data
        lo = index * BLOCK
        hi = min(obj.size, lo + BLOCK) - 1
        headers = {"Range": f"bytes={lo}-{hi}"}
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
        if resp.status_code != 206 or len(data) != hi - lo + 1:
            raise BadReply(f"{obj.ark}: {where} sent {len(data)} bytes, not {hi - lo + 1}")
        self._memory.put(key, data, len(data))
        return data

    async def _read_whole(self, obj: RemoteObject) -> bytes:
        key = f"{obj.url} {obj.etag}"
        data = self._memory.get(key)
        if data is not None:
            return data
        resp = await self._get(obj.url, {})
        raise_for_status(resp, f"object of {obj.ark}")
        data, where = resp.content, origin(obj.url)
        if obj.etag and resp.headers.get("etag") not in (None, obj.etag):
            raise ObjectChanged(f"{obj.ark} changed at {where} since it was looked up")
        if len(data) != obj.size:
            raise BadReply(f"{obj.ark}: {where} sent {len(data)} bytes, not {obj.size}")
        if obj.sha256 is not None and hashlib.sha256(data).digest() != obj.sha256:
            raise BadReply(f"{obj.ark}: the bytes from {where} do not match its SHA-256 digest")
        self._memory.put(key, data, len(data))
        return data

    async def aclose(self) -> None:
        await self._client.aclose()
