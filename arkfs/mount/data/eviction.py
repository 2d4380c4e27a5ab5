"""The chunk cache's eviction seam: which cached files stay when the cache is full.

A policy sees every file the disk cache (chunk_cache.py) admits, every hit on one and every
removal, by key and size, and answers which keys must go; the cache deletes those files.
It holds nothing else: the files, the chunk index and their checks stay in the cache. As
cvmfs keeps its QuotaManager apart from its cache manager, another policy (size-aware,
archives pinned, ...) is one class that meets EvictionPolicy, given to ChunkCache.

LRUPolicy is the first policy: the least recently used file goes first, each weighed by its
size. Keys are the cache's file keys (a tag, then a pack id or hash); their order survives
a remount through the files' mtimes, which the cache re-dates on reads and scans oldest
first into admit().
"""

from collections.abc import Iterator
from typing import Protocol

from arkfs.util.lru import LRU


class EvictionPolicy(Protocol):
    """Chooses which cached files to evict so their sizes stay within capacity.

    Not thread-safe: the cache calls it under its index lock."""

    @property
    def capacity(self) -> int:
        """The bound on total, in bytes."""
        ...

    @property
    def total(self) -> int:
        """The summed size of the files held."""
        ...

    def __contains__(self, key: object) -> bool: ...

    def __iter__(self) -> Iterator[bytes]:
        """The keys held, the next to be evicted first."""
        ...

    def size(self, key: bytes) -> int:
        """The size key was admitted with (KeyError if not held)."""
        ...

    def admit(self, key: bytes, size: int) -> list[bytes]:
        """Hold key (size bytes), just used; return the keys to evict for it (maybe key)."""
        ...

    def hit(self, key: bytes) -> None:
        """key was just read (ignored when not held)."""
        ...

    def remove(self, key: bytes) -> None:
        """Forget key (ignored when not held)."""
        ...

    def clear(self) -> None:
        """Forget every key."""
        ...


class LRUPolicy:
    """Least recently used first, weighed by size (arkfs.util.lru)."""

    def __init__(self, capacity: int) -> None:
        self._lru: LRU[bytes, None] = LRU(capacity)

    @property
    def capacity(self) -> int:
        return self._lru.capacity

    @property
    def total(self) -> int:
        return self._lru.total

    def __contains__(self, key: object) -> bool:
        return key in self._lru

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._lru)

    def size(self, key: bytes) -> int:
        return self._lru.weight(key)

    def admit(self, key: bytes, size: int) -> list[bytes]:
        return [old for old, _ in self._lru.put(key, None, size)]

    def hit(self, key: bytes) -> None:
        self._lru.get(key)

    def remove(self, key: bytes) -> None:
        self._lru.pop(key)

    def clear(self) -> None:
        self._lru.clear()
