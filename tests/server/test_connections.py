"""A real `arkfs serve` ends connections after streamed replies (file bytes, `?tar`) as
HTTP asks: at once after `Connection: close`, and after --keep-alive seconds idle otherwise.
Before #23 item 13, 300 GETs with `Connection: close` held 300 descriptors of the server
until the clients closed their ends."""

import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.archive import publish
from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:b5072/k9ep"
STREAMED = [f"/{ARK}/data%2Ebin", f"/{ARK}?tar"]  # file bytes, and download all
WAIT = 20.0  # seconds a client waits for the server's end of the connection, at most


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("connections")
    (root / "src").mkdir()
    (root / "src" / "data.bin").write_bytes(random.Random(3).randbytes(200_000))
    publish(root / "src", ARK, "--store", str(root / "store"))
    return root / "store"


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def ask(url: str, path: str, connection: str | None) -> socket.socket:
    """A raw HTTP/1.1 GET of path, with that Connection header if any; the open socket, the
    reply's head and body read (by Content-Length): the client's end stays open."""
    where = urlsplit(url)
    sock = socket.create_connection((where.hostname, where.port))
    sock.settimeout(WAIT)
    header = f"Connection: {connection}\r\n" if connection else ""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: test\r\n{header}\r\n".encode())
    got = b""
    while b"\r\n\r\n" not in got:
        got += sock.recv(65536)
    head, _, body = got.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200"), head
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += sock.recv(65536)
    assert len(body) == length
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server ends the connection (EOF) within WAIT seconds."""
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    """Client sockets, all closed at the end."""
    opened: list[socket.socket] = []
    try:
        yield opened
    finally:
        for s in opened:
            s.close()


def test_connection_close_after_streamed_replies_frees_the_servers_descriptor(
    store: Path, sockets: list[socket.socket]
) -> None:
    with arkfs_server(store, "--open-read") as (url, proc):
        before = descriptors(proc.pid)
        for i in range(300):
            sockets.append(ask(url, STREAMED[i % 2], "close"))
        held = descriptors(proc.pid) - before
        assert held < 10, f"{held} descriptors held"  # not one per connection the client keeps
        assert all(closed_by_server(s) for s in sockets[:10])


def test_idle_connections_after_streamed_replies_end_after_the_keep_alive_time(
    store: Path, sockets: list[socket.socket]
) -> None:
    with arkfs_server(store, "--open-read", "--keep-alive", "1") as (url, _):
        for path in STREAMED:
            sockets.append(ask(url, path, None))
        assert all(closed_by_server(s) for s in sockets)


@pytest.mark.parametrize("seconds", ["0", "-1", "inf", "nan"])
def test_a_keep_alive_time_that_is_no_positive_number_is_bad_input(
    tmp_path: Path, seconds: str
) -> None:
    done = run_arkfs(
        "serve", "--store", str(tmp_path / "s"), "--open-read", "--keep-alive", seconds
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--keep-alive must be a positive number of seconds" in done.stderr
