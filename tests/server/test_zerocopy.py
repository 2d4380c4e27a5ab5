"""zerocopy.py: a reply body sent from its file with sendfile, and nothing else taken for one."""

import os
import random
from pathlib import Path

import pytest
import trio

from arkfs.server import zerocopy
from arkfs.server.zerocopy import FileShrank, Span, send_span, span_of

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def _send(span: Span) -> tuple[bytes, OSError | None]:
    """What send_span put on a socket for span, read whole, and the error it raised."""

    async def main() -> tuple[bytes, OSError | None]:
        a, b = trio.socket.socketpair()
        got, error = bytearray(), None

        async def drain() -> None:
            while chunk := await b.recv(1 << 16):
                got.extend(chunk)

        with a, b:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(drain)
                try:
                    await send_span(a, span)
                except OSError as exc:
                    error = exc
                finally:
                    a.shutdown(trio.socket.SHUT_WR)
        return bytes(got), error

    try:
        return trio.run(main)
    finally:
        os.close(span.fd)


def test_a_span_larger_than_the_socket_buffer_arrives_whole_from_its_offset(
    tmp_path: Path,
) -> None:
    data = random.Random(1).randbytes(5_000_000)
    (tmp_path / "xorb").write_bytes(data)
    fd = os.open(tmp_path / "xorb", os.O_RDONLY)
    span = Span(os.pread(fd, 4_000_000, 123_457), fd, 123_457)
    assert _send(span) == (data[123_457:4_123_457], None)
    assert span.sent


def test_a_file_that_ends_before_its_span_is_an_error_not_a_hang(tmp_path: Path) -> None:
    (tmp_path / "xorb").write_bytes(b"x" * 100_000)
    fd = os.open(tmp_path / "xorb", os.O_RDONLY)
    span = Span(b"x" * 200_000, fd, 0)  # the file shrank after its bytes were read
    got, error = _send(span)
    assert isinstance(error, FileShrank) and "100000 bytes before" in str(error)
    assert got == b"x" * 100_000 and not span.sent


def test_only_the_very_body_object_is_taken_for_a_span() -> None:
    body = bytes(range(256)) * 512
    span = Span(body, -1, 0)
    zerocopy._spans[id(body)] = span
    try:
        assert span_of(body) is span
        assert span_of(bytes(bytearray(body))) is None  # equal bytes, another object
        assert span_of(b"") is None
    finally:
        del zerocopy._spans[id(body)]
