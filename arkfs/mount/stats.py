"""Counters of a mount, updated from the trio thread and reported as JSON (the root's
user.arkfs.stats); mount/exposition.py renders them for Prometheus."""

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any


def _counter(help: str) -> Any:
    """A counter field, starting at 0, with its help text."""
    return field(default=0, metadata={"help": help})


@dataclass
class MountStats:
    """What a mount has done: plain counters, cheap to bump from the trio thread."""

    reads: int = _counter("read() calls answered, failed ones included")
    bytes_read: int = _counter("bytes returned to readers")
    cache_hits: int = _counter("chunks a read found in memory or in the disk cache")
    cache_misses: int = _counter("chunks a read had to wait for from the backend")
    bytes_fetched: int = _counter("packed xorb bytes fetched for chunks, footers not included")
    fetches: int = _counter("data fetches sent to the backend")
    errors: int = _counter("read errors raised by the reader")
    prefetched_bytes: int = _counter("decoded bytes brought into memory ahead of the reader")
    memory_hits: int = _counter("chunks served from the in-memory LRU (part of cache_hits)")
    disk_hits: int = _counter("chunks loaded from the disk cache, by reads or prefetch")
    footer_fetches: int = _counter("xorb footers fetched from the backend")
    footers_sent: int = _counter("xorb footers a reconstruction or a batch carried (no fetch)")
    early_loads: int = _counter("chunks a read claimed by its file's map while it was checked")
    maps_loaded: int = _counter("file maps built from the backend and verified")
    maps_from_disk: int = _counter("file maps loaded from the disk cache and verified again")
    object_fetches: int = _counter("blocks of plain HTTP objects fetched from their responders")
    object_disk_hits: int = _counter("blocks of plain HTTP objects loaded from the disk cache")
    object_prefetches: int = _counter("blocks of plain HTTP objects claimed ahead of the reader")
    url_refreshes: int = _counter(
        "reconstructions of a run's bytes, its fetch URL missing or expired"
    )
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


COUNTERS = {f.name: f.metadata["help"] for f in fields(MountStats) if "help" in f.metadata}
GAUGES = {  # what the JSON holds besides the counters: sizes, limits, what the mount holds
    "cache_bytes": "bytes of chunks in the disk cache",
    "cache_limit": "most bytes of chunks the disk cache keeps",
    "cache_chunks": "chunks in the disk cache",
    "cache_bad_files": "damaged files found in the disk cache",
    "memory_bytes": "bytes of decoded chunks in memory",
    "object_memory_bytes": "bytes of plain HTTP object blocks in memory",
    "memory_limit": "most bytes of decoded chunks kept in memory",
    "maps": "file maps held",
    "inflight_chunks": "chunks being fetched",
    "prefetch_groups": "prefetch groups under way",
    "write_backlog_bytes": "bytes waiting to be written to the disk cache",
    "archives_loaded": "archive versions loaded",
    "inodes": "inodes the kernel knows",
}
NOT_METRICS = {"pid"}
