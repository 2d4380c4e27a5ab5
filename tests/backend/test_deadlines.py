"""Every remote read ends by its deadline, on real sockets: a tiny HTTP server on 127.0.0.1
that stalls, or trickles its reply a byte at a time (never slow enough for a per-receive
timeout to fire), against RangedGetter, RemoteBackend.fetch and httpx requests."""

import random
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest
import trio

from arkfs.backend import remote
from arkfs.backend.base import Unreachable
from arkfs.backend.remote import RemoteBackend
from arkfs.net.ranged import RangedGetter
from arkfs.net.retry import RetryPolicy
from arkfs.xet.reconstruction import FetchRange

DEADLINE = 1.0  # seconds: every bound below is asserted at 3x this
FAIL_FAST = 0.5  # seconds an origin that left requests unanswered is not asked again
DATA = random.Random(7).randbytes(1 << 20)
XORB = bytes(range(32))
SECRET = "sig=s3cret"
STUCK_MODES = ["stall", "trickle-head", "trickle-body"]


class Server(socketserver.ThreadingTCPServer):
    """Answers ranged GETs of DATA and POSTs (as an upload would get), as mode says:

    ok: at once, keep-alive; close: at once, then closes the connection; busy: 503 with
    Retry-After: 30; stall: reads the request, sends nothing; trickle-head: sends the whole
    reply one byte per tick; trickle-body: the head at once, then one byte per tick.
    /v1/token/* is always answered 404 at once, as by a CAS without a token route.
    """

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server_address[1]}"
        self.mode = "ok"
        self.tick = 0.2
        self.connections = 0  # accepted so far
        self.stuck = 0  # connections held in a stall or a trickle right now
        self.lock = threading.Lock()

    def wait_unstuck(self, timeout: float = 3 * DEADLINE) -> None:
        """Wait until every stalled or trickling connection was closed by its client."""
        end = time.monotonic() + timeout
        while self.stuck:
            assert time.monotonic() < end, f"{self.stuck} connections still open"
            time.sleep(0.02)


class Handler(socketserver.StreamRequestHandler):
    server: Server
    wbufsize = 0

    def handle(self) -> None:
        self.connection.settimeout(30)  # a client that never closes cannot hold the suite
        with self.server.lock:
            self.server.connections += 1
        try:
            while self._one():
                pass
        except OSError:
            pass

    def _one(self) -> bool:
        """Answer one request; False once the connection is done."""
        line = self.rfile.readline()
        if not line:
            return False
        method, path, _ = line.decode().split(" ", 2)
        headers = {}
        while (h := self.rfile.readline()) not in (b"\r\n", b""):
            name, _, value = h.decode().partition(":")
            headers[name.strip().lower()] = value.strip()
        self.rfile.read(int(headers.get("content-length", "0")))
        mode = self.server.mode
        if path.startswith("/v1/token/"):
            return self._send(404, b'{"error": "no token route"}', "")
        if mode == "busy":
            return self._send(503, b"busy", "Retry-After: 30\r\n")
        if method == "POST":
            status, body, extra = 200, b'{"was_inserted": true}', ""
        else:
            first, last = map(int, headers["range"].removeprefix("bytes=").split("-"))
            body = DATA[first : last + 1]
            status, extra = 206, f"Content-Range: bytes {first}-{last}/{len(DATA)}\r\n"
        if mode in ("ok", "close"):
            return self._send(status, body, extra, close=mode == "close")
        head = self._head(status, len(body), extra)
        with self.server.lock:
            self.server.stuck += 1
        try:
            if mode == "stall":
                self.rfile.read(1)  # until the client closes
                return False
            if mode == "trickle-body":
                self.wfile.write(head)
                head = b""
            for byte in head + body:
                time.sleep(self.server.tick)
                self.wfile.write(bytes([byte]))
            return True
        finally:
            with self.server.lock:
                self.server.stuck -= 1

    def _head(self, status: int, length: int, extra: str, close: bool = False) -> bytes:
        connection = "Connection: close\r\n" if close else ""
        return (
            f"HTTP/1.1 {status} Whatever\r\nContent-Length: {length}\r\n"
            f"Content-Type: application/octet-stream\r\n{extra}{connection}\r\n"
        ).encode()

    def _send(self, status: int, body: bytes, extra: str, close: bool = False) -> bool:
        self.wfile.write(self._head(status, len(body), extra, close) + body)
        return not close


@pytest.fixture
def server() -> Iterator[Server]:
    httpd = Server()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)


def fetch_range(server: Server, i: int, size: int = 64 * 1024) -> FetchRange:
    """The i-th range of size bytes of DATA, at a signed-looking URL."""
    return FetchRange(f"{server.url}/xorb?{SECRET}", 0, 1, i * size, (i + 1) * size - 1)


def assert_too_slow(error: Unreachable, server: Server) -> None:
    message = str(error)
    assert message.startswith(f"cannot reach {server.url}: no complete answer within 1 s")
    assert SECRET not in message and "\n" not in message


@pytest.mark.parametrize("close", [False, True])
def test_ranged_get_receives_ranges(server: Server, close: bool) -> None:
    """A healthy server: the bytes asked for, on one keep-alive connection unless it closes."""
    server.mode = "close" if close else "ok"
    getter = RangedGetter(10.0, RetryPolicy(deadline=DEADLINE))
    for first, last in [(0, 99), (5000, 1 << 19)]:
        reply = getter.get(f"{server.url}/x", f"bytes={first}-{last}", time.monotonic() + 10)
        assert reply.status == 206 and reply.body == DATA[first : last + 1]
    assert server.connections == (2 if close else 1)


@pytest.mark.parametrize("mode", STUCK_MODES)
def test_ranged_get_ends_by_its_deadline_and_closes_its_socket(server: Server, mode: str) -> None:
    server.mode = mode
    getter = RangedGetter(10.0, RetryPolicy(deadline=DEADLINE))
    start = time.monotonic()
    with pytest.raises(Unreachable) as info:
        getter.get(f"{server.url}/x?{SECRET}", "bytes=0-65535", start + DEADLINE)
    assert time.monotonic() - start < 3 * DEADLINE
    assert_too_slow(info.value, server)
    assert "(1 attempt)" in str(info.value)
    server.wait_unstuck()


def test_ranged_get_honours_retry_after_beyond_its_deadline(server: Server) -> None:
    """503 asking for 30 s: no pause past the deadline, so one attempt, then give up."""
    server.mode = "busy"
    getter = RangedGetter(10.0, RetryPolicy(deadline=5.0))
    start = time.monotonic()
    with pytest.raises(Unreachable, match=r"HTTP 503 \(busy\) \(1 attempt\); retry later"):
        getter.get(f"{server.url}/x", "bytes=0-9", start + 5.0)
    assert time.monotonic() - start < 5.0


@pytest.mark.parametrize("mode", ["stall", "trickle-body"])
def test_stuck_fetches_give_their_threads_back(server: Server, mode: str) -> None:
    """More stuck fetches at once than FETCH_THREADS all fail by the deadline (those that
    waited for a thread too) and close their sockets; once the server is healthy again,
    the next fetch, inside the fail-fast window, gets a thread and its bytes at once."""
    stuck = remote.FETCH_THREADS + 4

    async def main() -> None:
        backend = RemoteBackend(server.url, None, retry_time=DEADLINE, fail_fast=FAIL_FAST)
        try:
            server.mode = mode
            failed: list[Unreachable] = []

            async def one(i: int) -> None:
                with pytest.raises(Unreachable) as info:
                    await backend.fetch(XORB, fetch_range(server, i))
                failed.append(info.value)

            start = time.monotonic()
            async with trio.open_nursery() as nursery:
                for i in range(stuck):
                    nursery.start_soon(one, i)
            assert time.monotonic() - start < 3 * DEADLINE
            assert len(failed) == stuck
            for error in failed:
                assert_too_slow(error, server)
            await trio.to_thread.run_sync(server.wait_unstuck)
            server.mode = "ok"
            fr = fetch_range(server, 3)
            start = time.monotonic()  # down a moment ago, healthy now: tried, not failed
            assert await backend.fetch(XORB, fr) == DATA[fr.byte_start : fr.byte_end + 1]
            assert time.monotonic() - start < 3 * DEADLINE
        finally:
            await backend.aclose()

    trio.run(main)


@pytest.mark.parametrize("mode", STUCK_MODES)
def test_httpx_read_ends_by_its_deadline(server: Server, mode: str) -> None:
    """A reconstruction (httpx) from a stuck server: httpx times each receive, not the whole
    request, so only the deadline ends it."""
    server.mode = mode

    async def main() -> None:
        backend = RemoteBackend(server.url, None, retry_time=DEADLINE)
        try:
            start = time.monotonic()
            with pytest.raises(Unreachable) as info:
                await backend.reconstruction(XORB, 0, 100)
            assert time.monotonic() - start < 3 * DEADLINE
            assert_too_slow(info.value, server)
            await trio.to_thread.run_sync(server.wait_unstuck)  # the cut connection is closed
        finally:
            await backend.aclose()

    trio.run(main)


def test_an_upload_that_keeps_moving_outlives_the_read_deadline(server: Server) -> None:
    """Uploads have no deadline: a reply that comes slowly but steadily is waited for."""
    server.mode, server.tick = "trickle-body", 0.05
    retry_time = 0.3

    async def main() -> bool:
        backend = RemoteBackend(server.url, "t", retry_time=retry_time)
        try:
            return await backend.upload_xorb(XORB, b"xorb bytes")
        finally:
            await backend.aclose()

    start = time.monotonic()
    assert trio.run(main) is True
    assert time.monotonic() - start > retry_time  # the reply took longer than a read may
