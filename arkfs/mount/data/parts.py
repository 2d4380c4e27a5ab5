"""The parts of the data path that every loader of a ContentReader shares: the disk cache,
its writer, the stats, the background host and the thread limiters."""

from dataclasses import dataclass

from arkfs.mount.data.cache_writer import CacheWriter
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.jobs import Host, Limiters
from arkfs.mount.stats import MountStats


@dataclass(frozen=True, slots=True)
class Parts:
    """What the map, chunk and object loaders of one reader work with."""

    cache: ChunkCache
    stats: MountStats
    host: Host
    limiters: Limiters
    writer: CacheWriter
