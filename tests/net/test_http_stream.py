"""Streamed replies (arkfs.net.client.stream, read_body): a body is read only as far as
its caller bounds it, against a real loopback server that sends an endless body."""

import http.server
import resource
from collections.abc import Iterator

import pytest
import trio

from arkfs.backend.base import Unreachable
from arkfs.net.client import TooLarge, make_client, read_body, stream
from arkfs.net.retry import RetryPolicy
from tests.support.threaded import serve_in_thread

POLICY = RetryPolicy(attempts=2, deadline=5.0)
MiB = 1 << 20


class Endless(http.server.BaseHTTPRequestHandler):
    """/endless: 200 with a chunked body that never ends (until the client leaves);
    /busy: 503 with a long body; /small: 200 'hello'."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        if self.path == "/small":
            self.send_response(200)
            self.send_header("Content-Length", "5")
            self.end_headers()
            self.wfile.write(b"hello")
            return
        self.send_response(503 if self.path == "/busy" else 200)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Retry-After", "0")
        self.end_headers()
        piece = b"x" * 65536
        try:
            for _ in range(100_000):  # ~6.5 GB: "endless" for a test, yet it ends
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        except OSError:
            return


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    with serve_in_thread(Endless) as url:
        yield url


def test_read_body_stops_at_its_bound_and_memory_stays_small(base: str) -> None:
    async def main() -> None:
        async with make_client(5.0) as client:
            async with stream(client, "GET", f"{base}/endless", POLICY) as resp:
                with pytest.raises(TooLarge, match=r"sent more than 1\.0 MiB"):
                    await read_body(resp, MiB, "a test body")
            async with stream(client, "GET", f"{base}/endless", POLICY) as resp:
                assert len(await read_body(resp, MiB, "a test body", cut=True)) == MiB
                assert len(resp.content) == MiB

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    trio.run(main)
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024  # a buffered read of the body would take gigabytes


def test_small_body_is_read_whole(base: str) -> None:
    async def main() -> bytes:
        async with (
            make_client(5.0) as client,
            stream(client, "GET", f"{base}/small", POLICY) as resp,
        ):
            return await read_body(resp, 5, "a test body")

    assert trio.run(main) == b"hello"


def test_retryable_status_with_an_endless_body_is_retried_then_unreachable(base: str) -> None:
    async def main() -> None:
        async with make_client(5.0) as client, stream(client, "GET", f"{base}/busy", POLICY):
            raise AssertionError("a 503 is never handed to the caller")

    with pytest.raises(Unreachable, match="503"):
        trio.run(main)


def test_no_connection_is_left_open(base: str) -> None:
    async def main() -> int:
        async with make_client(5.0) as client:
            for _ in range(5):
                async with stream(client, "GET", f"{base}/endless", POLICY) as resp:
                    await read_body(resp, 1024, "a test body", cut=True)
            pool = client._transport._pool  # type: ignore[attr-defined]
            return len(pool.connections)

    assert trio.run(main) == 0
