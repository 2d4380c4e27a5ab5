"""A minimal CAS endpoint on 127.0.0.1 that records what hf_xet uploads to it.

It accepts xorbs and shards and answers the rest so that hf_xet falls back cleanly
(404 for global dedup, xorb grants and /v2/shards). It is the capture point for
comparing hf_xet's bytes with ours, not a stand-in for the arkfs server.
"""

import http.server
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.support.threaded import serve_in_thread


@dataclass
class Recording:
    """What one upload session sent."""

    xorbs: dict[str, bytes] = field(default_factory=dict)  # hash string -> body
    shards: list[bytes] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)  # (method, path)


def _handler(rec: Recording) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _reply(self, status: int, body: dict | None = None) -> None:
            data = json.dumps(body or {}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length", 0)))

        def do_GET(self) -> None:
            rec.requests.append(("GET", self.path))
            self._reply(404)

        def do_POST(self) -> None:
            rec.requests.append(("POST", self.path))
            body = self._body()
            parts = self.path.strip("/").split("/")
            if parts[:2] == ["v1", "xorbs"]:
                rec.xorbs[parts[-1]] = body
                self._reply(200, {"was_inserted": True})
            elif parts == ["v1", "shards"]:
                rec.shards.append(body)
                self._reply(200, {"result": 1})
            elif parts[:2] == ["v1", "telemetry"]:
                self._reply(200)
            else:
                self._reply(404)

    return Handler


@contextmanager
def recording_cas() -> Iterator[tuple[str, Recording]]:
    """Run the endpoint in a thread; yield its base URL and the recording."""
    rec = Recording()
    with serve_in_thread(_handler(rec)) as url:
        yield url, rec
