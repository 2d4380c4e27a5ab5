"""Garbage collection of a store: what no version references, and what may be deleted.

Mark: every file hash in every version of every ARK is live; a shard that registers a live
file is kept whole (with its other files and dedup rows); every xorb that a kept shard's
terms or dedup rows name is kept. Sweep: every other shard and xorb, unless it was written
within the grace period, for a publish in progress may still bind it (its xorbs and shard
are uploaded before the bind). Each store sweeps its own way (`collect`); this module holds
the rule and the report.

A publish that dedups against an old xorb no version references, and binds after a gc
deleted it, is refused cleanly: its shard's records are checked against stored xorbs.
"""

from collections.abc import Iterable

from arkfs.archive.manifest import Manifest
from arkfs.store.base import GcReport, Store

__all__ = ["DEFAULT_GRACE", "GcReport", "kept_shards", "kept_xorbs", "live_files"]

DEFAULT_GRACE = 24 * 3600.0  # seconds: longer than any publish


def live_files(store: Store) -> set[bytes]:
    """The XET hash of every file of every version of every ARK in store."""
    live: set[bytes] = set()
    for ark in store.list_bindings():
        for v in store.list_versions(ark):
            manifest = Manifest.from_msgpack(store.get_binding(ark, v.version).manifest)
            live.update(h for _, h, _, _ in manifest.entries.file_hashes())
    return live


def kept_shards(file_shards: Iterable[tuple[bytes, bytes]], live: set[bytes]) -> set[bytes]:
    """The shards to keep: those registering a live file, from (file, shard) pairs."""
    return {shard for file_hash, shard in file_shards if file_hash in live}


def kept_xorbs(shard_xorbs: Iterable[tuple[bytes, bytes]], dead: set[bytes]) -> set[bytes]:
    """The xorbs to keep: those named by a shard not dead, from (shard, xorb) pairs."""
    return {xorb for shard, xorb in shard_xorbs if shard not in dead}
