"""Streaming file digest: chunk, hash every chunk, and give the XET file hash and SHA-256."""

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from arkfs.xet.chunking import Chunker
from arkfs.xet.hashing import chunk_hash, file_hash


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
    sha256: bytes
    size: int
    chunks: tuple[tuple[bytes, int], ...]  # (chunk hash, chunk size) in file order


class FileHasher:
    """Feed a file's bytes in order; chunks come out as they complete, the digest at the end."""

    def __init__(self) -> None:
        self._chunker = Chunker()
        self._sha = hashlib.sha256()
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
        self._sha.update(data)
        return self._emit(self._chunker.feed(data))

    def finish(self) -> tuple[list[Chunk], FileDigest]:
        """End of file: the last chunk (if any) and the digest."""
        last = self._emit(self._chunker.finish())
        pairs = tuple(self._pairs)
        return last, FileDigest(file_hash(pairs), self._sha.digest(), self._size, pairs)


def digest_pieces(pieces: Iterable[bytes]) -> FileDigest:
    """Digest of the concatenation of pieces, keeping no chunk data."""
    hasher = FileHasher()
    for piece in pieces:
        hasher.update(piece)
    return hasher.finish()[1]


def digest_bytes(data: bytes) -> FileDigest:
    """Digest of data held in memory."""
    return digest_pieces([data])
