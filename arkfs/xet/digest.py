"""Streaming file digest: chunk, hash every chunk, and give the XET file hash and SHA-256."""

import hashlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

from arkfs.xet.chunking import Chunker, Piece
from arkfs.xet.hashing import chunk_hash, file_hash

BLOCK_SIZE = 16 * 1024 * 1024


class BlockSource(Protocol):
    """What a file is read through: an open binary file, or io.BytesIO."""

    def read(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int | None: ...


@dataclass(frozen=True, slots=True)
class Chunk:
    """One content-defined chunk of a file."""

    hash: bytes
    offset: int
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


@dataclass(frozen=True, slots=True)
class FileDigest:
    """What hashing a whole file yields."""

    file_hash: bytes
    sha256: bytes | None
    size: int
    chunks: tuple[tuple[bytes, int], ...]  # (chunk hash, chunk size) in file order


class FileHasher:
    """Feed a file's bytes in order; chunks come out as they complete, the digest at the end.

    With keep_chunks=False only the digest is made: no Chunk is returned, no chunk copied.
    """

    def __init__(self, sha256: bool = True, keep_chunks: bool = True) -> None:
        self._chunker = Chunker()
        self._sha = hashlib.sha256() if sha256 else None
        self._keep = keep_chunks
        self._pairs: list[tuple[bytes, int]] = []
        self._size = 0

    def _emit(self, pieces: list[Piece]) -> list[Chunk]:
        out = []
        for data in pieces:
            h = chunk_hash(data)
            if self._keep:  # a copy: data may be a view of a buffer the reader reuses
                out.append(Chunk(h, self._size, bytes(data)))
            self._pairs.append((h, len(data)))
            self._size += len(data)
        return out

    def update(self, data: bytes | bytearray | memoryview) -> list[Chunk]:
        """Add bytes; return the chunks they complete."""
        return self.add(data, self._chunker.feed(data))

    def add(self, data: bytes | bytearray | memoryview, pieces: list[Piece]) -> list[Chunk]:
        """Add bytes already cut by a Chunker of the caller's: pieces are the chunks they end."""
        if self._sha is not None:
            self._sha.update(data)
        return self._emit(pieces)

    def finish(self, tail: list[Piece] | None = None) -> tuple[list[Chunk], FileDigest]:
        """End of file: the last chunk (if any) and the digest.

        tail is the caller's Chunker.finish() when the caller cuts; else this hasher's own.
        """
        last = self._emit(self._chunker.finish() if tail is None else tail)
        pairs = tuple(self._pairs)
        sha = self._sha.digest() if self._sha is not None else None
        return last, FileDigest(file_hash(pairs), sha, self._size, pairs)


def cut_blocks(f: BlockSource, block_size: int = BLOCK_SIZE) -> Iterator[tuple[Piece, list[Piece]]]:
    """Read f in blocks and cut them into chunks, one block ahead in a thread.

    Yields (block, chunks that block completes); the last item is (b"", final chunk).
    Reading and the gear scan release the GIL, so they overlap with the caller's hashing.
    A block is valid until the caller asks for the next one: blocks after the first are
    read into two buffers in turn (a fresh 16 MiB object per block costs a page fault per
    4 KiB, as much as the scan). A file that fits in one block needs no thread.
    """
    chunker = Chunker()
    first = f.read(block_size)
    pieces = chunker.feed(first) if first else []
    if len(first) < block_size:
        if first:
            yield first, pieces
        yield b"", chunker.finish()
        return
    buffers = (bytearray(block_size), bytearray(block_size))

    def step(k: int) -> tuple[memoryview, list[Piece]]:
        view = memoryview(buffers[k])
        filled = 0
        while filled < block_size and (got := f.readinto(view[filled:])):
            filled += got
        block = view[:filled]
        return block, (chunker.feed(block) if filled else chunker.finish())

    with ThreadPoolExecutor(1, thread_name_prefix="arkfs-chunk") as pool:
        future = pool.submit(step, 0)
        yield first, pieces
        k = 0
        while True:
            block, chunks = future.result()
            if not block:
                yield b"", chunks
                return
            k = 1 - k
            future = pool.submit(step, k)
            yield block, chunks


def digest_stream(
    f: BlockSource, sha256: bool = True, on_chunk: Callable[[Chunk], None] | None = None
) -> FileDigest:
    """Digest a binary stream, calling on_chunk for each chunk as it completes."""
    hasher = FileHasher(sha256, keep_chunks=on_chunk is not None)
    tail: list[Piece] = []
    for block, pieces in cut_blocks(f):
        if not block:
            tail = pieces
            break
        for c in hasher.add(block, pieces):
            if on_chunk:
                on_chunk(c)
    last, digest = hasher.finish(tail)
    for c in last:
        if on_chunk:
            on_chunk(c)
    return digest


def digest_pieces(pieces: Iterable[bytes]) -> FileDigest:
    """Digest of the concatenation of pieces, keeping no chunk data."""
    hasher = FileHasher(keep_chunks=False)
    for piece in pieces:
        hasher.update(piece)
    return hasher.finish()[1]


def digest_bytes(data: bytes) -> FileDigest:
    """Digest of data held in memory."""
    return digest_pieces([data])
