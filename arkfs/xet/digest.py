"""Streaming file digest: chunk, hash every chunk, and give the XET file hash and SHA-256."""

import hashlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO

from arkfs.xet.chunking import Chunker
from arkfs.xet.hashing import chunk_hash, file_hash

BLOCK_SIZE = 16 * 1024 * 1024


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
    """Feed a file's bytes in order; chunks come out as they complete, the digest at the end."""

    def __init__(self, sha256: bool = True) -> None:
        self._chunker = Chunker()
        self._sha = hashlib.sha256() if sha256 else None
        self._pairs: list[tuple[bytes, int]] = []
        self._size = 0

    def _emit(self, pieces: list[bytes]) -> list[Chunk]:
        out = []
        for data in pieces:
            out.append(Chunk(chunk_hash(data), self._size, data))
            self._pairs.append((out[-1].hash, len(data)))
            self._size += len(data)
        return out

    def update(self, data: bytes | bytearray | memoryview) -> list[Chunk]:
        """Add bytes; return the chunks they complete."""
        return self.add(data, self._chunker.feed(data))

    def add(self, data: bytes | bytearray | memoryview, pieces: list[bytes]) -> list[Chunk]:
        """Add bytes already cut by a Chunker of the caller's: pieces are the chunks they end."""
        if self._sha is not None:
            self._sha.update(data)
        return self._emit(pieces)

    def finish(self, tail: list[bytes] | None = None) -> tuple[list[Chunk], FileDigest]:
        """End of file: the last chunk (if any) and the digest.

        tail is the caller's Chunker.finish() when the caller cuts; else this hasher's own.
        """
        last = self._emit(self._chunker.finish() if tail is None else tail)
        pairs = tuple(self._pairs)
        sha = self._sha.digest() if self._sha is not None else None
        return last, FileDigest(file_hash(pairs), sha, self._size, pairs)


def cut_blocks(f: BinaryIO, block_size: int = BLOCK_SIZE) -> Iterator[tuple[bytes, list[bytes]]]:
    """Read f in blocks and cut them into chunks, one block ahead in a thread.

    Yields (block, chunks that block completes); the last item is (b"", final chunk).
    Reading and the gear scan release the GIL, so they overlap with the caller's hashing.
    """
    chunker = Chunker()

    def step() -> tuple[bytes, list[bytes]]:
        block = f.read(block_size)
        return block, (chunker.feed(block) if block else chunker.finish())

    with ThreadPoolExecutor(1, thread_name_prefix="arkfs-chunk") as pool:
        future = pool.submit(step)
        while True:
            block, chunks = future.result()
            if block:
                future = pool.submit(step)
            yield block, chunks
            if not block:
                return


def digest_stream(
    f: BinaryIO, sha256: bool = True, on_chunk: Callable[[Chunk], None] | None = None
) -> FileDigest:
    """Digest a binary stream, calling on_chunk for each chunk as it completes."""
    hasher = FileHasher(sha256)
    tail: list[bytes] = []
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
    hasher = FileHasher()
    for piece in pieces:
        hasher.update(piece)
    return hasher.finish()[1]


def digest_bytes(data: bytes) -> FileDigest:
    """Digest of data held in memory."""
    return digest_pieces([data])
