"""A fault-injecting HTTP proxy on 127.0.0.1, between a client (mount, publish) and
`arkfs serve`.

Each request is read whole, forwarded upstream with its Host header kept (so the URLs the
server hands out point back at the proxy), and the whole reply is read before it is
passed on, or damaged, as the proxy's current fault says. A fault applies to the requests
its `kind` matches (see `kind_of`), to the next `count` of them or forever, until heal().

The modes:
- 5xx: answer 503 instead of forwarding;
- 404: answer 404 instead of forwarding (a server without that route);
- reset: read the request, then close with a TCP reset and no reply;
- truncate: the head with the true Content-Length, half the body, then close;
- short: half the body, with a Content-Length that matches it;
- flip: one bit of the body flipped, in its middle;
- stall-head: read the request and never answer;
- stall-body: the head and half the body, then nothing more;
- trickle: the head, then the body one byte every TRICKLE_TICK seconds;
- slow: the whole reply, SLOW_DELAY seconds late (a far or overloaded mirror).

swap(old, new) forwards every request whose target holds old with new in its place: a
mirror that answers for one file with another's reconstruction. `seen` counts every
request by kind.

down("refuse") closes the listening socket, so connections are refused; down("blackhole")
listens with a full accept queue that is never served, so connects hang as to a host whose
packets are dropped. up() serves again on the same port. A stalled connection stays stalled
after heal(), as one would with a real stuck server: the client must give it up.
"""

import http.client
import socket
import socketserver
import struct
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from arkfs.xet.reconstruction import FOOTERS_HEADER
from tests.support.mount import Mounted, arkfs_mount
from tests.support.server import Server

MODES = (
    "5xx", "404", "reset", "truncate", "short", "flip",
    "stall-head", "stall-body", "trickle", "slow",
)  # fmt: skip
KINDS = ("any", "archive", "reconstruction", "batch", "xorb", "footer", "upload")
TRICKLE_TICK = 1.0  # seconds between trickled bytes
SLOW_DELAY = 0.25  # seconds each reply of a slow proxy is held back
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "te"}


@dataclass
class Request:
    """One request as the proxy read it."""

    method: str
    target: str
    headers: list[tuple[str, str]]
    body: bytes

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


def kind_of(req: Request) -> str:
    """What a request asks for: reconstruction, batch (the reconstructions of many files),
    footer (a suffix range of a xorb), xorb (any other range of one), upload (a POST or
    PUT), or archive (resolver and the rest)."""
    path = req.target.split("?", 1)[0]
    if req.method in ("POST", "PUT"):
        return "upload"
    if path.endswith("/reconstructions"):
        return "batch"
    if "/reconstructions/" in path:
        return "reconstruction"
    if path.startswith("/v1/xorb-data/"):
        return "footer" if (req.header("range") or "").startswith("bytes=-") else "xorb"
    return "archive"


@dataclass
class Fault:
    mode: str
    kind: str = "any"
    count: int | None = None  # requests left to damage; None: all of them


class FaultProxy(socketserver.ThreadingTCPServer):
    """The proxy; use it through fault_proxy(), which starts and stops it."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, upstream: str, port: int = 0) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        host, _, up_port = upstream.removeprefix("http://").partition(":")
        self.upstream = (host, int(up_port))
        self.port = int(self.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"
        self.lock = threading.Lock()
        self.fault: Fault | None = None
        self.damaged = 0  # requests damaged so far
        self.closing = threading.Event()
        self.clients: set[socket.socket] = set()
        self.seen: Counter[str] = Counter()  # requests received, by kind
        self.swaps: dict[str, str] = {}

    def inject(self, mode: str, kind: str = "any", count: int | None = None) -> None:
        """Damage the next count requests of kind (all of them if count is None)."""
        assert mode in MODES and kind in KINDS, (mode, kind)
        with self.lock:
            self.fault, self.damaged = Fault(mode, kind, count), 0

    def heal(self) -> None:
        """Forward every later request untouched."""
        with self.lock:
            self.fault = None

    def take(self, req: Request) -> str | None:
        """The mode to apply to req, if the fault covers it; counts it."""
        with self.lock:
            self.seen[kind_of(req)] += 1
            f = self.fault
            if f is None or f.kind not in ("any", kind_of(req)):
                return None
            if f.count is not None:
                if f.count <= 0:
                    return None
                f.count -= 1
            self.damaged += 1
            return f.mode


class _Handler(socketserver.BaseRequestHandler):
    server: FaultProxy

    def handle(self) -> None:
        sock: socket.socket = self.request
        sock.settimeout(60)
        with self.server.lock:
            self.server.clients.add(sock)
        reader = sock.makefile("rb")
        try:
            while (req := _read_request(reader)) is not None:
                if not self._answer(sock, req):
                    break
        except OSError:
            pass
        finally:
            with self.server.lock:
                self.server.clients.discard(sock)
            reader.close()

    def _answer(self, sock: socket.socket, req: Request) -> bool:
        """Answer one request, damaged as the fault says; False once the connection is done."""
        mode = self.server.take(req)
        if mode in ("5xx", "404"):
            head = _head(503 if mode == "5xx" else 404, [("Content-Type", "text/plain")], 16)
            sock.sendall(head + b"injected fault\r\n")
            return True
        if mode == "reset":
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return False
        if mode == "stall-head":
            self._hold(sock)
            return False
        status, headers, body, upstream = self._forward(req)
        if mode == "slow" and self.server.closing.wait(SLOW_DELAY):
            return False
        half = len(body) // 2
        if mode == "short":
            body = body[:half]
        elif mode == "flip" and body:
            body = body[:half] + bytes([body[half] ^ 0x10]) + body[half + 1 :]
        length = len(body)
        if req.method == "HEAD":  # no body: the length is the upstream's
            length = int(next((v for k, v in upstream if k.lower() == "content-length"), 0))
        head = _head(status, headers, length)
        if mode == "truncate":
            sock.sendall(head + body[:half])
            return False
        if mode == "stall-body":
            sock.sendall(head + body[:half])
            self._hold(sock)
            return False
        if mode == "trickle":
            sock.sendall(head)
            for i in range(len(body)):
                if self.server.closing.wait(TRICKLE_TICK):
                    return False
                sock.sendall(body[i : i + 1])
            return True
        sock.sendall(head + body)
        return True

    def _forward(
        self, req: Request
    ) -> tuple[int, list[tuple[str, str]], bytes, list[tuple[str, str]]]:
        """Status, headers to pass on, body and every upstream header of req's reply."""
        conn = http.client.HTTPConnection(*self.server.upstream, timeout=120)
        try:
            dropped = set(HOP_BY_HOP)
            fault = self.server.fault
            if fault is not None and fault.kind == "footer":
                # as a CAS without the extension: footers are fetched, so the fault hits them
                dropped.add(FOOTERS_HEADER.lower())
            headers = {k: v for k, v in req.headers if k.lower() not in dropped}
            target = req.target
            for old, new in self.server.swaps.items():
                target = target.replace(old, new)
            conn.request(req.method, target, body=req.body or None, headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            every = resp.getheaders()
            kept = [(k, v) for k, v in every if k.lower() not in HOP_BY_HOP]
            return resp.status, kept, body, every
        except (OSError, http.client.HTTPException):
            text = [("Content-Type", "text/plain")]
            return 502, text, b"proxy: upstream unreachable\r\n", text
        finally:
            conn.close()

    def _hold(self, sock: socket.socket) -> None:
        """Send nothing until the client gives up or the proxy stops."""
        sock.settimeout(0.2)
        while not self.server.closing.is_set():
            try:
                if not sock.recv(65536):
                    return
            except TimeoutError:
                continue
            except OSError:
                return


def _read_request(reader: "BinaryIO") -> Request | None:
    line = reader.readline()
    if not line:
        return None
    method, target, _ = line.decode("latin-1").split(" ", 2)
    headers = []
    while (h := reader.readline()) not in (b"\r\n", b"\n", b""):
        name, _, value = h.decode("latin-1").partition(":")
        headers.append((name.strip(), value.strip()))
    req = Request(method, target, headers, b"")
    req.body = reader.read(int(req.header("content-length") or 0))
    return req


def _head(status: int, headers: list[tuple[str, str]], length: int) -> bytes:
    lines = [f"HTTP/1.1 {status} {http.client.responses.get(status, 'Status')}"]
    lines += [f"{k}: {v}" for k, v in headers]
    lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class Proxy:
    """A FaultProxy that can go down and come back on the same port."""

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream
        self._server: FaultProxy | None = None
        self._thread: threading.Thread | None = None
        self._hole: list[socket.socket] = []
        self._start(0)
        assert self._server is not None
        self.port: int = self._server.port
        self.url: str = self._server.url

    @property
    def server(self) -> FaultProxy:
        assert self._server is not None, "the proxy is down"
        return self._server

    def inject(self, mode: str, kind: str = "any", count: int | None = None) -> None:
        self.server.inject(mode, kind, count)

    def heal(self) -> None:
        self.server.heal()

    def swap(self, old: str, new: str) -> None:
        """Forward requests for old as requests for new (see the module docstring)."""
        self.server.swaps[old] = new

    @property
    def damaged(self) -> int:
        return self.server.damaged

    @property
    def seen(self) -> Counter[str]:
        """The requests received so far, by kind (see kind_of)."""
        with self.server.lock:
            return Counter(self.server.seen)

    def _start(self, port: int) -> None:
        self._server = FaultProxy(self.upstream, port)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.05,))
        self._thread.daemon = True
        self._thread.start()

    def down(self, how: str) -> None:
        """Stop serving: refuse connections ("refuse"), or let connects hang ("blackhole")."""
        assert how in ("refuse", "blackhole")
        self._stop()
        if how == "blackhole":
            hole = socket.socket()
            hole.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            hole.bind(("127.0.0.1", self.port))
            hole.listen(0)
            self._hole = [hole]
            for _ in range(2):  # fill the accept queue: later SYNs are dropped
                c = socket.socket()
                c.setblocking(False)
                c.connect_ex(("127.0.0.1", self.port))
                self._hole.append(c)
            time.sleep(0.1)

    def up(self) -> None:
        """Serve again, with no fault, on the same port."""
        for s in self._hole:
            s.close()
        self._hole = []
        self._start(self.port)

    def _stop(self) -> None:
        if self._server is None:
            return
        server, self._server = self._server, None
        server.closing.set()
        server.shutdown()
        server.server_close()
        with server.lock:
            clients = list(server.clients)
        for c in clients:
            with suppress(OSError):
                c.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=10)

    def close(self) -> None:
        self._stop()
        for s in self._hole:
            s.close()
        self._hole = []


@contextmanager
def fault_proxy(upstream: str) -> Iterator[Proxy]:
    """A Proxy to upstream (http://127.0.0.1:PORT), stopped at the end however the test ends."""
    proxy = Proxy(upstream)
    try:
        yield proxy
    finally:
        proxy.close()


@dataclass(frozen=True)
class Archive:
    """The archive at ark on server: its files by name, as published."""

    server: Server
    ark: str
    files: dict[str, bytes]


def mount_through(proxy: Proxy, where: Path, *extra: str) -> AbstractContextManager[Mounted]:
    """A mount whose only server is the proxy, its cache in where/cache (kept after it)."""
    return arkfs_mount(
        where / "mnt", "--server", proxy.url, "--cache-dir", str(where / "cache"), *extra
    )
