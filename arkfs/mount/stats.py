"""Counters of a mount, updated from the trio thread and reported as JSON."""

from collections.abc import Callable
from dataclasses import dataclass, field, fields


@dataclass
class MountStats:
    """What a mount has done: plain counters, cheap to bump from the trio thread."""

    reads: int = 0  # read() calls answered (including failed ones)
    bytes_read: int = 0  # bytes returned to readers
    cache_hits: int = 0  # chunks a read found in memory or in the disk cache
    cache_misses: int = 0  # chunks a read had to wait for from the backend
    bytes_fetched: int = 0  # packed xorb bytes fetched for chunks (footers not included)
    fetches: int = 0  # data fetches sent to the backend
    errors: int = 0  # ReadErrors raised by the reader
    prefetched_bytes: int = 0  # decoded bytes brought into memory ahead of the reader
    memory_hits: int = 0  # chunks served from the in-memory LRU (part of cache_hits)
    disk_hits: int = 0  # chunks loaded from the disk cache (by reads or prefetch)
    footer_fetches: int = 0  # xorb footers fetched from the backend
    footers_sent: int = 0  # xorb footers a reconstruction carried (no fetch)
    early_loads: int = 0  # chunks a read claimed by its file's map while it was checked
    maps_loaded: int = 0  # file maps built from the backend and verified
    maps_from_disk: int = 0  # file maps loaded from the disk cache and verified again
    object_fetches: int = 0  # blocks of plain HTTP objects fetched from their responders
    object_disk_hits: int = 0  # blocks of plain HTTP objects loaded from the disk cache
    object_prefetches: int = 0  # blocks of plain HTTP objects claimed ahead of the reader
    url_refreshes: int = 0  # reconstructions of a run's bytes, its fetch URL missing or expired
    # Set by the ContentReader: sizes and limits of its caches, read when reporting.
    gauges: Callable[[], dict[str, int]] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, object]:
        """Every counter, and the cache sizes and limits the reader reports."""
        out: dict[str, object] = {
            f.name: getattr(self, f.name) for f in fields(self) if f.name != "gauges"
        }
        if self.gauges is not None:
            out.update(self.gauges())
        return out
