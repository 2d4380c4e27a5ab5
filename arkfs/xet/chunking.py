"""Content-defined chunking (spec: "Content-Defined Chunking"), streaming and reference versions."""

import struct
from collections.abc import Iterable, Iterator

import arkfs.xet._gearcut as _gearcut
from arkfs.xet.constants import GEAR_MASK, MAX_CHUNK_SIZE, MIN_CHUNK_SIZE
from arkfs.xet.gear_table import GEAR_TABLE

_TABLE_BYTES = struct.pack("=256Q", *GEAR_TABLE)
_U64 = 0xFFFFFFFFFFFFFFFF

Piece = bytes | memoryview  # a chunk: a view of the data fed, or a copy


class Chunker:
    """Streaming chunker: feed() bytes in pieces of any size, then finish().

    Each call returns the chunks completed so far. A chunk that lies within the data just
    fed is a view of it (no copy: valid while that data is), one that began in an earlier
    feed is bytes. Only the open chunk (at most MAX_CHUNK_SIZE bytes) is kept between
    calls, as a copy, so a file of any size streams through.
    """

    def __init__(self) -> None:
        self._h = 0
        self._pos = 0
        self._open: list[bytes] = []

    def feed(self, data: bytes | bytearray | memoryview) -> list[Piece]:
        """Add data; return the chunks it completes, in order."""
        cuts, self._h, self._pos = _gearcut.scan(
            _TABLE_BYTES, data, self._h, self._pos, MIN_CHUNK_SIZE, MAX_CHUNK_SIZE, GEAR_MASK
        )
        view = memoryview(data)
        chunks: list[Piece] = []
        start = 0
        for cut in cuts:
            if self._open:
                self._open.append(bytes(view[start:cut]))
                chunks.append(b"".join(self._open))
                self._open.clear()
            else:
                chunks.append(view[start:cut])
            start = cut
        if start < len(view):
            self._open.append(bytes(view[start:]))
        return chunks

    def finish(self) -> list[Piece]:
        """End of input: return the last, possibly short, chunk (none for empty input)."""
        last = b"".join(self._open)
        self._open.clear()
        self._h = self._pos = 0
        return [last] if last else []


def chunk_stream(pieces: Iterable[bytes]) -> Iterator[Piece]:
    """Chunks of the concatenation of pieces."""
    chunker = Chunker()
    for piece in pieces:
        yield from chunker.feed(piece)
    yield from chunker.finish()


def reference_chunk_lengths(data: bytes) -> list[int]:
    """The spec's chunk_file pseudo-code, byte by byte, in plain Python (slow; for tests)."""
    lengths = []
    h = 0
    start = 0
    for i, b in enumerate(data):
        h = ((h << 1) + GEAR_TABLE[b]) & _U64
        size = i - start + 1
        if size < MIN_CHUNK_SIZE:
            continue
        if size >= MAX_CHUNK_SIZE or (h & GEAR_MASK) == 0:
            lengths.append(size)
            start = i + 1
            h = 0
    if start < len(data):
        lengths.append(len(data) - start)
    return lengths
