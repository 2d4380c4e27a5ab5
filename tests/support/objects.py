"""A plain HTTP server on 127.0.0.1 holding objects that ARKs resolve to, with or without
Range, ETag and digest headers, and an `?info` ANVL record per object."""

import base64
import hashlib
import http.server
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.threaded import serve_in_thread


@dataclass
class Obj:
    """One object: its bytes and which headers it is served with."""

    data: bytes
    etag: str | None = None
    ranges: bool = True
    digest: str | None = "repr"  # repr, content, old, wrong, or None
    info: str | None = None  # the ANVL ERC answered to PATH?info
    flip: int | None = None  # a byte flipped in every body sent (the headers stay true)


@dataclass
class Objects:
    url: str = ""
    objects: dict[str, Obj] = field(default_factory=dict)
    ranges_asked: int = 0


def _digest_header(obj: Obj) -> tuple[str, str] | None:
    digest = hashlib.sha256(obj.data if obj.digest != "wrong" else obj.data + b"!").digest()
    b64 = base64.b64encode(digest).decode()
    if obj.digest in ("repr", "wrong"):
        return "Repr-Digest", f"sha-512=:AAAA:, sha-256=:{b64}:"
    if obj.digest == "content":
        return "Content-Digest", f"sha-256=:{b64}:"
    if obj.digest == "old":
        return "Digest", f"SHA-256={b64}"
    return None


def _handler(state: Objects) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _send(self, status: int, body: bytes, headers: dict[str, str], head: bool) -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if not head:
                self.wfile.write(body)

        def _answer(self, head: bool) -> None:
            path, _, query = self.path.partition("?")
            obj = state.objects.get(path)
            if obj is None:
                self._send(404, b"no such object\n", {}, head)
                return
            if query == "info":
                info = (obj.info or "").encode()
                self._send(200 if obj.info else 404, info, {"Content-Type": "text/plain"}, head)
                return
            headers = {"Content-Type": "application/octet-stream"}
            if obj.etag:
                headers["ETag"] = obj.etag
            if obj.ranges:
                headers["Accept-Ranges"] = "bytes"
            digest = _digest_header(obj)
            if digest:
                headers[digest[0]] = digest[1]
            data = obj.data
            if obj.flip is not None:
                data = data[: obj.flip] + bytes([data[obj.flip] ^ 1]) + data[obj.flip + 1 :]
            wanted = self.headers.get("Range")
            if_range = self.headers.get("If-Range")
            if wanted and obj.ranges and (if_range is None or if_range == obj.etag):
                state.ranges_asked += 1
                first, _, last = wanted.removeprefix("bytes=").partition("-")
                lo, hi = int(first), min(int(last), len(obj.data) - 1)
                headers["Content-Range"] = f"bytes {lo}-{hi}/{len(obj.data)}"
                headers.pop(digest[0] if digest else "", None)
                self._send(206, data[lo : hi + 1], headers, head)
                return
            self._send(200, data, headers, head)

        def do_GET(self) -> None:
            self._answer(False)

        def do_HEAD(self) -> None:
            self._answer(True)

    return Handler


@contextmanager
def object_server() -> Iterator[Objects]:
    """An Objects server in a thread; stopped at the end."""
    state = Objects()
    with serve_in_thread(_handler(state)) as url:
        state.url = url
        yield state
