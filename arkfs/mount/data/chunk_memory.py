"""Decoded chunks in memory, bounded by the bytes of the buffers that hold them.

A chunk is often a view of the buffer it was fetched or read in with its neighbours (a
stored chunk is its payload, a cached one a slice of its pack's span: no copy). Such a
buffer lives while any chunk of it is kept, so a bound on the chunks alone would not
bound memory: one chunk read again could keep its whole 16 MiB fetch alive. Buffers are
therefore what is kept, weighed and let go, whole and in LRU order; a chunk that is its
own bytes is its own buffer.
"""

from collections.abc import Callable

from arkfs.util.lru import LRU
from arkfs.xet.compression import ChunkData

# The chunks kept of one buffer, by hash. Never empty while held, they keep the buffer
# alive, so its id (the key it is held under) cannot be reused meanwhile.
Held = dict[bytes, ChunkData]


class ChunkMemory:
    """Chunks by hash; the least recently used buffers go once theirs pass capacity."""

    def __init__(self, capacity: int) -> None:
        self._buffers: LRU[int, Held] = LRU(capacity)
        self._where: dict[bytes, int] = {}  # chunk hash -> id of the buffer holding it

    def __contains__(self, h: object) -> bool:
        return h in self._where

    def __len__(self) -> int:
        """How many chunks are kept."""
        return len(self._where)

    @property
    def capacity(self) -> int:
        return self._buffers.capacity

    @property
    def total(self) -> int:
        """Bytes of the buffers kept."""
        return self._buffers.total

    def get(self, h: bytes, default: ChunkData = b"") -> ChunkData:
        """The chunk, its buffer now the most recently used; default if absent."""
        return self._find(h, default, self._buffers.get)

    def peek(self, h: bytes, default: ChunkData = b"") -> ChunkData:
        """The chunk, leaving the LRU order alone; default if absent."""
        return self._find(h, default, self._buffers.peek)

    def _find(self, h: bytes, default: ChunkData, look: Callable[[int], Held | None]) -> ChunkData:
        """The chunk under h in the buffer look() finds; default if absent."""
        key = self._where.get(h)
        if key is None:
            return default
        held = look(key)
        assert held is not None
        return held[h]

    def put(self, h: bytes, chunk: ChunkData) -> None:
        """Keep chunk under h, its buffer now the most recently used."""
        buffer = chunk.obj if isinstance(chunk, memoryview) else chunk
        key = id(buffer)
        old = self._where.get(h)
        if old is not None and old != key:
            self._drop(old, h)
        held = self._buffers.peek(key, {})
        held[h] = chunk
        self._where[h] = key
        for _, evicted in self._buffers.put(key, held, memoryview(buffer).nbytes):
            for gone in evicted:
                del self._where[gone]

    def _drop(self, key: int, h: bytes) -> None:
        """Forget chunk h of the buffer under key, and the buffer once it keeps none."""
        held = self._buffers.peek(key)
        assert held is not None
        del held[h]
        if not held:
            self._buffers.pop(key)
