"""A proxy on 127.0.0.1 in front of `arkfs serve` that flips one byte in every xorb reply
(GET /v1/xorb-data/...), and passes everything else through. It keeps the client's Host
header, so the URLs the server hands out point at the proxy."""

import http.server
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.support.threaded import serve_in_thread

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "content-encoding"}


def _handler(upstream: str, client: httpx.Client) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            resp = client.request(self.command, upstream + self.path, headers=headers, content=body)
            data = bytearray(resp.content)
            if self.path.startswith("/v1/xorb-data/") and data:
                data[len(data) // 2] ^= 0x01
            self.send_response(resp.status_code)
            for key, value in resp.headers.items():
                if key.lower() not in HOP_BY_HOP:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(bytes(data))

        do_GET = do_HEAD = do_PUT = do_POST = _forward

    return Handler


@contextmanager
def flipper(upstream: str) -> Iterator[str]:
    """Serve the flipping proxy of upstream; yield its base URL."""
    with httpx.Client(timeout=60) as client, serve_in_thread(_handler(upstream, client)) as url:
        yield url
