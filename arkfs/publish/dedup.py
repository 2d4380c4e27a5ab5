"""Where chunks already are, and the fragmentation rule (spec: "Deduplication").

A publish session learns chunk locations from three places: the xorbs it builds itself
(Local Session Deduplication), the xorbs of the archive's previous version, and the keyed
shards of Global Deduplication answers. A short run of known chunks in a file already cut
into many short ranges is uploaded again instead of referenced (Fragmentation Prevention).
"""

import time
from collections import deque
from dataclasses import dataclass, field

from arkfs.xet.hashing import ZERO_HASH
from arkfs.xet.shard import Shard, keyed_chunk_hash
from arkfs.xet.xorb import XorbFooter

# Fragmentation Prevention: "minimum run lengths (e.g., 8 chunks or 1 MiB)".
MIN_RUN_CHUNKS = 8
MIN_RUN_BYTES = 1 << 20
WINDOW = 128  # ranges of a file over which the chunks-per-range average is taken
LOW_FACTOR = 0.5  # hysteresis: the floor of the average once short runs are referenced again


class XorbRef:
    """A xorb already in the CAS, or one this session is building (hash set once built)."""

    __slots__ = ("hash",)

    def __init__(self, h: bytes | None = None) -> None:
        self.hash = h


Location = tuple[XorbRef, int]  # a xorb and the chunk's index in it


MAX_LOCATIONS = 1024  # locations kept per chunk hash (a repeated block has many)


def extends(after: Location, loc: Location) -> bool:
    """Is loc the chunk at `after` again, or the next one in that xorb?"""
    return loc[0] is after[0] and loc[1] in (after[1], after[1] + 1)


# An ordered set of a chunk's locations; a chunk known in one place (most are) keeps its
# Location alone: a dict per chunk took ~230 bytes more, 230 MB at 1,000,000 files.
Locations = dict[Location, None]
Located = Location | Locations


def _pick(locs: Located | None, after: Location | None) -> Location | None:
    """The location that continues after, else the first one known."""
    if not locs:
        return None
    if isinstance(locs, tuple):
        return locs
    if after is not None:
        for loc in ((after[0], after[1] + 1), after):
            if loc in locs:
                return loc
    return next(iter(locs))


def _remember(table: dict[bytes, Located], h: bytes, loc: Location) -> None:
    locs = table.setdefault(h, loc)
    if isinstance(locs, tuple):
        if locs != loc:
            table[h] = {locs: None, loc: None}
    elif len(locs) < MAX_LOCATIONS:
        locs[loc] = None


@dataclass
class _KeyedTable:
    """The chunks of global-dedup shards that share one chunk hash key."""

    key: bytes
    expiry: int
    chunks: dict[bytes, Located] = field(default_factory=dict)


class ChunkIndex:
    """Chunk hash to its locations, from session xorbs, known footers and keyed shards.

    A chunk can live in several places (a repeated block); the one that continues the
    caller's current run is preferred, so the file keeps long ranges.
    """

    def __init__(self) -> None:
        self._plain: dict[bytes, Located] = {}
        self._keyed: dict[bytes, _KeyedTable] = {}
        self._refs: dict[bytes, XorbRef] = {}
        self.queried: set[bytes] = set()  # chunk hashes already asked of global dedup

    def find(self, h: bytes, after: Location | None = None) -> Location | None:
        """Where chunk h is, if known, preferring the location right after `after`."""
        loc = _pick(self._plain.get(h), after)
        if (loc is not None and (after is None or extends(after, loc))) or not self._keyed:
            return loc
        now = int(time.time())
        for table in self._keyed.values():
            if now <= table.expiry:
                keyed = table.chunks.get(keyed_chunk_hash(table.key, h))
                for found in [keyed] if isinstance(keyed, tuple) else keyed or ():
                    _remember(self._plain, h, found)
        return _pick(self._plain.get(h), after)

    def add(self, h: bytes, loc: Location) -> None:
        """Record a location of chunk h."""
        _remember(self._plain, h, loc)

    def ref(self, xorb_hash: bytes) -> XorbRef:
        """The one XorbRef of a stored xorb, so runs can compare by identity."""
        return self._refs.setdefault(xorb_hash, XorbRef(xorb_hash))

    def add_footer(self, footer: XorbFooter) -> None:
        """Every chunk of a stored xorb (e.g. from the archive's previous version)."""
        ref = self.ref(footer.xorb_hash)
        for i, h in enumerate(footer.chunk_hashes):
            self.add(h, (ref, i))

    def add_shard(self, shard: Shard) -> None:
        """The chunks of a global dedup answer (Chunk Hash Key Usage)."""
        key = ZERO_HASH if shard.footer is None else shard.footer.chunk_hash_key
        expiry = 2**63 if shard.footer is None else shard.footer.key_expiry
        table = (
            self._plain
            if key == ZERO_HASH
            else self._keyed.setdefault(key, _KeyedTable(key, expiry)).chunks
        )
        for block in shard.cas_blocks:
            ref = self.ref(block.xorb_hash)
            for i, c in enumerate(block.chunks):
                _remember(table, c.chunk_hash, (ref, i))


def long_enough(chunks: int, size: int) -> bool:
    """Is a run of known chunks long enough to reference whatever came before?"""
    return chunks >= MIN_RUN_CHUNKS or size >= MIN_RUN_BYTES


class Fragmentation:
    """Fragmentation Prevention for one file, as xet-core's DefragPrevention decides it
    (deduplication/src/defrag_prevention.rs, allow_dedup_on_next_range, the defaults of
    hf_xet 1.8: 128 ranges, 8 chunks a range, hysteresis 0.5).

    The estimate is the average chunks per range over the file's last WINDOW ranges, and
    there is none until the file has that many: before, every run is referenced (a file
    of a few ranges is read in a few terms whatever they hold). Then a run shorter than
    the average is uploaded again while the average is below the floor; the floor is
    MIN_RUN_CHUNKS * LOW_FACTOR until a run is refused, and MIN_RUN_CHUNKS from then until
    the average reaches it (hysteresis, so the decision does not flap). A run long enough
    on its own (long_enough) is always referenced: xet-core refuses none either, since it
    refuses only runs shorter than an average under MIN_RUN_CHUNKS.
    """

    def __init__(self) -> None:
        self.ranges: deque[int] = deque(maxlen=WINDOW)
        self.strict = False  # the floor is MIN_RUN_CHUNKS, not MIN_RUN_CHUNKS * LOW_FACTOR

    def placed(self, extends: bool) -> None:
        """A chunk was placed, extending the current range or starting a new one."""
        if extends and self.ranges:
            self.ranges[-1] += 1
        else:
            self.ranges.append(1)

    def accept(self, chunks: int, size: int) -> bool:
        """Should a run of known chunks that ended short be referenced?"""
        if long_enough(chunks, size) or len(self.ranges) < WINDOW:
            return True
        average = sum(self.ranges) / len(self.ranges)
        if average >= (MIN_RUN_CHUNKS if self.strict else MIN_RUN_CHUNKS * LOW_FACTOR):
            self.strict = False
            return True
        if chunks < average:
            self.strict = True
            return False
        return True
