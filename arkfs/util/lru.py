"""The least-recently-used map of arkfs: items with a weight each, bounded by their total."""

from collections import OrderedDict
from collections.abc import Hashable, Iterator
from typing import Generic, TypeVar, overload

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
D = TypeVar("D")


class LRU(Generic[K, V]):
    """Items oldest first; once their total weight passes capacity, the oldest go.

    With keep_one, the newest item stays even when it alone weighs more than capacity.
    Not thread-safe: callers that share one across threads hold their own lock.
    """

    __slots__ = ("_items", "_keep_one", "_total", "_weights", "capacity")

    def __init__(self, capacity: int, *, keep_one: bool = False) -> None:
        self.capacity = capacity
        self._keep_one = keep_one
        self._items: OrderedDict[K, V] = OrderedDict()
        self._weights: dict[K, int] = {}
        self._total = 0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[K]:
        """Keys, oldest first."""
        return iter(self._items)

    @property
    def total(self) -> int:
        """The summed weight of the items."""
        return self._total

    @overload
    def get(self, key: K) -> V | None: ...
    @overload
    def get(self, key: K, default: D) -> V | D: ...
    def get(self, key: K, default: object = None) -> object:
        """The value of key, now the newest item; default if absent."""
        items = self._items
        try:
            items.move_to_end(key)  # on the read path: one lookup fewer than `in` first
        except KeyError:
            return default
        return items[key]

    @overload
    def peek(self, key: K) -> V | None: ...
    @overload
    def peek(self, key: K, default: D) -> V | D: ...
    def peek(self, key: K, default: object = None) -> object:
        """The value of key, leaving the order alone; default if absent."""
        return self._items.get(key, default)

    def put(self, key: K, value: V, weight: int = 1) -> list[tuple[K, V]]:
        """Set key to value as the newest item; return the items evicted, oldest first."""
        items = self._items
        if key in items:
            self._total -= self._weights[key]
            items.move_to_end(key)
        items[key] = value
        self._weights[key] = weight
        self._total += weight
        evicted: list[tuple[K, V]] = []
        floor = 1 if self._keep_one else 0
        while self._total > self.capacity and len(items) > floor:
            old, old_value = items.popitem(last=False)
            self._total -= self._weights.pop(old)
            evicted.append((old, old_value))
        return evicted

    @overload
    def pop(self, key: K) -> V | None: ...
    @overload
    def pop(self, key: K, default: D) -> V | D: ...
    def pop(self, key: K, default: object = None) -> object:
        """Remove key; its value, or default if absent."""
        if key not in self._items:
            return default
        self._total -= self._weights.pop(key)
        return self._items.pop(key)

    def items(self) -> Iterator[tuple[K, V]]:
        """(key, value) pairs, oldest first."""
        return iter(self._items.items())

    def weight(self, key: K) -> int:
        """The weight key was put with (KeyError if absent)."""
        return self._weights[key]

    def clear(self) -> None:
        """Remove every item."""
        self._items.clear()
        self._weights.clear()
        self._total = 0
