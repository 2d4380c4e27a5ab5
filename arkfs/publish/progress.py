"""Publish progress: the counters of a publish, by phase.

The publisher bumps plain ints from the trio thread; a display (arkfs.cli.progress_display) reads
them from its own thread, so drawing never holds up the publish."""

from dataclasses import dataclass, field

PHASES = ("scan", "hash", "upload", "bind")
DONE = "done"


@dataclass
class Progress:
    """What a publish has done so far; the source of truth for every display and summary."""

    files: int = 0  # files to publish (found by the scan)
    total: int = 0  # bytes of file content to hash
    hashed: int = 0  # of total, bytes hashed or known: read, or taken from the tree index
    read: int = 0  # of hashed, bytes read from the tree
    known: int = 0  # of hashed, bytes of files the tree index knew unchanged (not read)
    new: int = 0  # chunk bytes that go into new xorbs
    deduplicated: int = 0  # chunk bytes referenced from xorbs already in the CAS
    stored: int = 0  # of new, chunk bytes in xorbs the CAS has accepted
    uploaded: int = 0  # serialized xorb bytes the CAS accepted
    xorbs: int = 0
    files_stored: int = 0  # files whose every chunk the CAS has acknowledged
    shard_bytes: int = 0  # bytes of the shards that register the files (known at bind)
    shards_sent: int = 0  # of shard_bytes, sent
    version: int | None = None  # the version bound, once it is
    unchanged: bool = False  # nothing changed since version: nothing was bound
    phases: list[str] = field(default_factory=lambda: [PHASES[0]])  # begun, in order
    began: dict[str, tuple[int, int]] = field(default_factory=lambda: {PHASES[0]: (0, 1)})

    def begin(self, phase: str) -> None:
        """Note that phase (one of PHASES, or DONE) has begun, and overall() then; again is a
        no-op."""
        if phase not in self.phases:
            self.began[phase] = self.overall()
            self.phases.append(phase)

    def bound(self, version: int, unchanged: bool = False) -> None:
        """The ARK is bound (or, unchanged, stays at version): the publish is done."""
        self.version, self.unchanged = version, unchanged
        self.begin(DONE)

    def overall(self) -> tuple[int, int]:
        """Work done and work known, in bytes: hashing, uploading new chunks, sending shards,
        and one more for the bind itself, so done reaches known only once bound."""
        done = self.hashed + self.stored + self.shards_sent + (self.version is not None)
        return done, self.total + self.new + self.shard_bytes + 1
