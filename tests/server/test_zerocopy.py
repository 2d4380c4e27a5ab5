"""zerocopy.py: a reply body sent from its file with sendfile, and nothing else taken for one."""

import os
import random
from pathlib import Path

import pytest
import trio

from arkfs.server.zerocopy import FileShrank, Span, send_span, span_of

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def _sent(path: Path, offset: int, size: int) -> bytes:
    """What send_span puts on a socket for path's bytes [offset, offset+size), read whole."""
    fd = os.open(path, os.O_RDONLY)
    span = Span(os.pread(fd, size, offset), fd, offset)

    async def main() -> bytes:
        a, b = trio.socket.socketpair()
        got = bytearray()

        async def drain() -> None:
            while chunk := await b.recv(1 << 16):
                got.extend(chunk)

        with a, b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                try:
                    await send_span(a, span)
                finally:
                    a.shutdown(trio.socket.SHUT_WR)
        assert span.sent
        return bytes(got)

    try:
        return trio.run(main)
    finally:
        os.close(fd)


def test_a_span_larger_than_the_socket_buffer_arrives_whole_from_its_offset(
    tmp_path: Path,
) -> None:
    data = random.Random(1).randbytes(5_000_000)
    (tmp_path / "xorb").write_bytes(data)
    assert _sent(tmp_path / "xorb", 123_457, 4_000_000) == data[123_457:4_123_457]


def test_a_file_that_ends_before_its_span_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "xorb").write_bytes(b"x" * 100_000)
    fd = os.open(tmp_path / "xorb", os.O_RDONLY)
    span = Span(b"x" * 200_000, fd, 0)  # the file shrank after its bytes were read

    async def main() -> None:
        a, b = trio.socket.socketpair()
        with a, b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_discard, b)
                try:
                    with pytest.raises(FileShrank, match="100000 bytes before"):
                        await send_span(a, span)
                finally:
                    a.shutdown(trio.socket.SHUT_WR)

    try:
        trio.run(main)
    finally:
        os.close(fd)
    assert not span.sent


async def _discard(sock: trio.socket.SocketType) -> None:
    while await sock.recv(1 << 16):
        pass


def test_only_the_very_body_object_is_taken_for_a_span() -> None:
    from arkfs.server import zerocopy

    body = bytes(range(256)) * 512
    span = Span(body, -1, 0)
    zerocopy._spans[id(body)] = span
    try:
        assert span_of(body) is span
        assert span_of(bytes(bytearray(body))) is None  # equal bytes, another object
        assert span_of(b"") is None
    finally:
        del zerocopy._spans[id(body)]
