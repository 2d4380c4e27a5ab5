"""Xorb replies sent from their file with sendfile(2), so the bytes are not copied again
into the socket: that copy was half of `arkfs serve`'s CPU per byte served.

hypercorn gives ASGI apps no zero-copy send. A `FileBody` reply carries its bytes as any
reply does (read from the file) and registers that body object here with the file they
came from, while hypercorn sends it. hypercorn hands a connection's writes to its
TCPServer (app.py's `_OneConnection.protocol_send`), which asks `span_of` whether a write
is that very object and then has `send_span` send the same bytes from the file instead.
Any write that is not (TLS, HTTP/2, a hypercorn that copies bodies) goes out from the
buffer as before: the same bytes, only slower. Xorbs never change under their name, so the
file holds what the buffer holds; a file that shrank cuts the reply short (`FileShrank`).
"""

import os
from collections.abc import Callable
from dataclasses import dataclass

import trio
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

SENDFILE_MIN = 64 * 1024  # smaller bodies are copied: one send beats a sendfile loop


class FileShrank(OSError):
    """A file ended before the bytes its reply promised."""


@dataclass
class Span:
    """body's bytes as they lie in the open file fd from offset; sent: sent from there."""

    body: bytes
    fd: int
    offset: int
    sent: bool = False


_spans: dict[int, Span] = {}  # id(body) -> its span, while its reply is being sent


def span_of(data: bytes) -> Span | None:
    """The span of a body being sent, if data is that very object."""
    span = _spans.get(id(data))
    return span if span is not None and span.body is data else None


async def send_span(sock: trio.socket.SocketType, span: Span) -> None:
    """Send span's bytes from its file to sock (non-blocking) with sendfile."""
    offset, left = span.offset, len(span.body)
    while left:
        try:
            sent = os.sendfile(sock.fileno(), span.fd, offset, left)
        except BlockingIOError:
            await trio.lowlevel.wait_writable(sock)
            continue
        if sent == 0:
            raise FileShrank(f"the file ended {left} bytes before the reply's end")
        offset, left = offset + sent, left - sent
    span.sent = True


class FileBody(Response):
    """A reply whose body also lies in the open file fd from offset (the reply closes fd);
    on_sent(n) is called once the n bytes went out through sendfile."""

    def __init__(
        self,
        body: bytes,
        fd: int,
        offset: int,
        on_sent: Callable[[int], None],
        status_code: int,
        headers: dict[str, str],
        media_type: str,
    ) -> None:
        super().__init__(body, status_code, headers, media_type)
        self.span = Span(body, fd, offset)
        self.on_sent = on_sent

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        _spans[id(self.span.body)] = self.span
        try:
            await super().__call__(scope, receive, send)
        finally:
            del _spans[id(self.span.body)]
            os.close(self.span.fd)
        if self.span.sent:
            self.on_sent(len(self.span.body))
