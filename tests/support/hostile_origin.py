"""A plain HTTP origin on 127.0.0.1 whose objects misbehave in chosen ways (lying ranges,
short HEADs, no or constant validators, ignored conditions or Range, no HEAD), and may
change version while a mount reads them. Contents are a deterministic pattern per version,
made on demand, so a 400 MiB object costs no memory here and tests check every byte
against truth() without holding a copy."""

import base64
import functools
import hashlib
import http.server
import random
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.utils import formatdate

from tests.support.threaded import serve_in_thread

MIB = 1024 * 1024
PERIOD = MIB + 7  # the pattern's period: a misplaced range never lines up with the truth
SHIFT = MIB  # how far a lying origin moves the range it sends
SHORT = 1000  # bytes a short HEAD leaves out


@functools.lru_cache(maxsize=8)
def _pattern(version: int) -> bytes:
    return random.Random(version).randbytes(PERIOD)


def truth(version: int, lo: int, hi: int) -> bytes:
    """Bytes [lo, hi) of any object at version."""
    pattern, out = _pattern(version), bytearray()
    while lo < hi:
        at = lo % PERIOD
        piece = pattern[at : at + hi - lo]
        out += piece
        lo += len(piece)
    return bytes(out)


@functools.lru_cache(maxsize=8)
def _sha256(version: int, size: int) -> str:
    h = hashlib.sha256()
    for lo in range(0, size, 8 * MIB):
        h.update(truth(version, lo, min(size, lo + 8 * MIB)))
    return base64.b64encode(h.digest()).decode()


@dataclass
class Hostile:
    """One object and how it misbehaves."""

    size: int
    etag: str | None = "strong"  # strong, weak, const (the same for every version), or None
    digest: bool = False  # a Repr-Digest of the version served
    dated: bool = False  # a Last-Modified of the version served
    ranges: str = "honest"  # honest; ignore: 200 to every Range; lie: 206 of other bytes
    conditional: bool = True  # honours If-Match and If-Range (RFC 9110)
    head: str = "honest"  # honest; short: Content-Length SHORT too small; 405
    flip: int | None = None  # the offset of a byte sent flipped (its digest stays the truth's)
    version: int = 1

    def etag_value(self) -> str | None:
        return {
            "strong": f'"v{self.version}"',
            "weak": f'W/"v{self.version}"',
            "const": '"same"',
        }.get(self.etag or "")


@dataclass
class Origin:
    url: str = ""
    objects: dict[str, Hostile] = field(default_factory=dict)
    requests: int = 0
    body_bytes: int = 0  # bytes of bodies written (to a reader that kept reading)


def _matches(condition: str | None, etag: str | None) -> bool:
    """Does an If-Match or If-Range condition hold (strong comparison; none: yes)?"""
    strong = etag is not None and not etag.startswith("W/")
    return condition is None or (strong and condition == etag)


def _handler(state: Origin) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _headers(self, status: int, headers: dict[str, str], length: int) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(length))
            self.end_headers()

        def _body(self, obj: Hostile, lo: int, hi: int) -> None:
            try:
                for at in range(lo, hi, MIB):
                    piece = truth(obj.version, at, min(hi, at + MIB))
                    if obj.flip is not None and at <= obj.flip < at + len(piece):
                        flipped = bytearray(piece)
                        flipped[obj.flip - at] ^= 0xFF
                        piece = bytes(flipped)
                    self.wfile.write(piece)
                    state.body_bytes += len(piece)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _answer(self, head: bool) -> None:
            state.requests += 1
            path, _, query = self.path.partition("?")
            obj = state.objects.get(path)
            if obj is None or query:
                self._headers(404, {}, 0)
                return
            if head and obj.head == "405":
                self._headers(405, {"Allow": "GET"}, 0)
                return
            etag = obj.etag_value()
            headers = {"Content-Type": "application/octet-stream", "Accept-Ranges": "bytes"}
            if etag:
                headers["ETag"] = etag
            if obj.digest:
                headers["Repr-Digest"] = f"sha-256=:{_sha256(obj.version, obj.size)}:"
            if obj.dated:
                headers["Last-Modified"] = formatdate(1.7e9 + obj.version * 1000, usegmt=True)
            if head:
                short = SHORT if obj.head == "short" else 0
                self._headers(200, headers, obj.size - short)
                return
            if obj.conditional and not _matches(self.headers.get("If-Match"), etag):
                self._headers(412, {}, 0)
                return
            wanted = self._range(obj, etag)
            if wanted is None:
                self._headers(200, headers, obj.size)
                self._body(obj, 0, obj.size)
                return
            lo, hi = wanted
            if lo >= obj.size:
                self._headers(416, {"Content-Range": f"bytes */{obj.size}"}, 0)
                return
            if obj.ranges == "lie":  # other bytes, and a Content-Range that says so
                move = SHIFT if hi + SHIFT <= obj.size else -SHIFT
                lo, hi = lo + move, hi + move
            headers["Content-Range"] = f"bytes {lo}-{hi - 1}/{obj.size}"
            self._headers(206, headers, hi - lo)
            self._body(obj, lo, hi)

        def _range(self, obj: Hostile, etag: str | None) -> tuple[int, int] | None:
            """The [lo, hi) asked, if this origin answers it with a 206."""
            wanted = self.headers.get("Range")
            if wanted is None or obj.ranges == "ignore":
                return None
            if obj.conditional and not _matches(self.headers.get("If-Range"), etag):
                return None  # RFC 9110 "If-Range": a weak or other validator: all of it
            first, _, last = wanted.removeprefix("bytes=").partition("-")
            return int(first), min(int(last) + 1, obj.size)

        def do_GET(self) -> None:
            try:
                self._answer(False)
            except (BrokenPipeError, ConnectionResetError):  # the reader had enough
                self.close_connection = True

        def do_HEAD(self) -> None:
            self._answer(True)

    return Handler


@contextmanager
def hostile_origin() -> Iterator[Origin]:
    """An Origin in a thread; stopped at the end."""
    state = Origin()
    with serve_in_thread(_handler(state)) as url:
        state.url = url
        yield state
