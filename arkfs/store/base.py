"""The narrow store interface, its records, and the consistency rules every backend enforces.

Backends (the local directory with SQLite now; an S3-compatible object store with PostgreSQL
later) implement Store. Methods are synchronous: the async server calls them through
trio.to_thread. put_shard checks records against the stored xorb footers with file_problem
and dedup_problem, and bind checks a new version with binding_problem. check() applies the
same rules to what is already indexed, and version_problems to each ARK's versions.
list_versions answers with arkfs.archive.record.VersionInfo, the one record of a version
every layer shares.
"""

import random
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Generic, NamedTuple, Protocol, TypeVar, runtime_checkable

from arkfs.archive.record import VersionInfo
from arkfs.store.errors import NotFound, Rejected, StoreCorrupt
from arkfs.util.lru import LRU
from arkfs.util.msgpack_file import FileSlice
from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.trust import named_footer, verify_terms
from arkfs.xet.xorb import XorbFooter

SHA256_SIZE = 32
# Footers kept, in chunks: 145 bytes each in memory, so about 9.5 MB, the footers of 8 full
# xorbs (a shard's intake or a file's reconstruction uses a few at a time). 256 Ki chunks
# held 37 MB of a server receiving a 1M-file publish, whose peak budget is 300 MiB.
FOOTER_CACHE_CHUNKS = 64 * 1024
UNINDEXED = "unindexed object"  # how check() starts a line about an orphan: no damage
_T = TypeVar("_T")
# Where a binding's manifest is: in memory, or (given to bind) in a file.
M = TypeVar("M", bound=bytes | FileSlice, covariant=True)


@dataclass(frozen=True, slots=True)
class FileRecord:
    """A file reconstruction: the file's XET hash, size, SHA-256 if known, and its terms."""

    file_hash: bytes
    size: int
    sha256: bytes | None
    terms: tuple[Term, ...]


class DedupEntry(NamedTuple):
    """A global-dedup eligible chunk and where it is stored."""

    chunk_hash: bytes
    xorb_hash: bytes
    chunk_index: int


class ChunkLocation(NamedTuple):
    """Where a chunk is stored: a xorb and the chunk's index in it."""

    xorb_hash: bytes
    chunk_index: int


@dataclass(frozen=True, slots=True)
class Binding(Generic[M]):
    """One version of an ARK (normalized key): its manifest (opaque msgpack) and ERC (ANVL).

    bind() assigns version and follows (the version it appends to, None for v1): a caller
    leaves both at their defaults. files and bytes summarize the manifest for list_versions,
    so the store never parses it; the caller supplies them.
    """

    ark: str
    manifest: M  # bind() copies a FileSlice to the store in pieces; stores return bytes
    erc: str
    updated: float  # Unix time the version was made
    version: int = 0
    message: str = ""
    follows: int | None = None
    files: int = 0
    bytes: int = 0


NewBinding = Binding[bytes | FileSlice]  # what bind() takes


@dataclass(frozen=True)
class GcReport:
    """What a gc deleted (or, dry, would delete): counts and bytes of shards and xorbs."""

    shards: int
    shard_bytes: int
    xorbs: int
    xorb_bytes: int
    young: int  # unreferenced shards and xorbs kept for the grace period

    @property
    def freed(self) -> int:
        """Bytes freed (or that would be)."""
        return self.shard_bytes + self.xorb_bytes


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts and sizes of what a store holds."""

    xorbs: int
    xorb_bytes: int
    shards: int
    shard_bytes: int
    files: int
    dedup_chunks: int
    bindings: int  # bound ARKs
    versions: int  # versions of all of them


FooterOf = Callable[[bytes], XorbFooter]


@runtime_checkable
class Store(Protocol):
    """Xorbs, shards, file reconstructions, global-dedup chunks and ARK versions.

    A put or bind returns only once what it stored is durable (acknowledged). Xorbs, shards
    and versions are never removed or changed, so a row that refers to them stays valid and
    an ARK keeps naming what it named.
    """

    def has_xorb(self, h: bytes) -> bool:
        """Is xorb h stored?"""
        ...

    def put_xorb(self, h: bytes, stored: bytes) -> bool:
        """Store xorb h in its stored form (chunk region and footer); False if already there.

        The caller has validated the chunks (stored_xorb); the store checks the footer and name.
        """
        ...

    def xorb_size(self, h: bytes) -> int:
        """Size in bytes of stored xorb h."""
        ...

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        """Bytes [start, end) of stored xorb h."""
        ...

    def read_xorb_file(self, h: bytes, start: int, end: int) -> tuple[bytes, int | None]:
        """read_xorb, and where the store keeps xorbs in files, a descriptor open on the file
        the bytes came from (the caller closes it), to send them again with sendfile."""
        ...

    def xorb_footer(self, h: bytes) -> XorbFooter:
        """The footer of stored xorb h, checked against its name."""
        ...

    def xorb_url(self, h: bytes, ttl: int) -> str | None:
        """A URL valid for ttl seconds where readers fetch xorb h's bytes (with Range) straight
        from the store, or None if the store has none (the server then signs its own)."""
        ...

    def put_shard(
        self,
        shard_hash: bytes,
        data: bytes,
        files: Sequence[FileRecord],
        dedup: Sequence[DedupEntry],
    ) -> bool:
        """Store a shard with the files and dedup chunks it registers; False if already there.

        Every record must agree with the footers of stored xorbs, or nothing is stored.
        """
        ...

    def has_file(self, file_hash: bytes) -> bool:
        """Is a reconstruction of the file stored?"""
        ...

    def get_file(self, file_hash: bytes) -> FileRecord:
        """The stored reconstruction of a file."""
        ...

    def file_sizes(self, hashes: Sequence[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        """Size and SHA-256 (None if unknown) of each stored file among hashes, in a few
        queries (a bind checks 1,000,000 files); hashes not stored are left out."""
        ...

    def dedup_lookup(self, chunk_hash: bytes) -> list[ChunkLocation]:
        """Every stored location of a global-dedup chunk; empty if none."""
        ...

    def bind(self, binding: NewBinding) -> int:
        """Append a new version of binding.ark and return its number; nothing is replaced."""
        ...

    def bind_again(self, ark: str, version: int, erc: str, updated: float, message: str) -> int:
        """Append a new version of ark bound to the manifest of its version version as
        stored (neither read out nor parsed: a metadata-only version costs the same for
        any number of files), with erc, updated and message; its number. NotFound if ark
        has no such version."""
        ...

    def get_binding(self, ark: str, version: int | None = None) -> Binding[bytes]:
        """The given version of an ARK (normalized key); its latest when version is None."""
        ...

    def get_erc(self, ark: str, version: int) -> str:
        """The ERC record (ANVL) of a version of an ARK, without its manifest; NotFound if
        there is no such version."""
        ...

    def list_versions(self, ark: str) -> list[VersionInfo]:
        """Every version of an ARK, oldest first."""
        ...

    def list_bindings(self, prefix: str = "") -> list[str]:
        """The bound ARKs that start with prefix, sorted."""
        ...

    def naans(self) -> list[str]:
        """The NAANs of the bound ARKs, sorted: one aggregate query, no per-ARK work."""
        ...

    def archived_bytes(self) -> int:
        """The file bytes of every bound version: one aggregate query, no per-ARK work."""
        ...

    def ready(self) -> None:
        """Return once the store and its index answer a trivial question (no per-ARK work);
        StoreError saying which does not."""
        ...

    def stats(self) -> StoreStats:
        """What the store holds."""
        ...

    def check(self, repair: bool = False, sample: int | None = None) -> list[str]:
        """One line per damage found; repair removes leftovers of interrupted writes only.
        Lines that start with "removed " or UNINDEXED report leftovers, and are no damage.

        sample: hash the bytes of that many xorbs and shards chosen at random, not all;
        every index row is followed either way.
        """
        ...

    def collect(self, live: set[bytes], cutoff: float, dry_run: bool = False) -> GcReport:
        """Delete the shards and xorbs no file of live needs, written before cutoff (Unix
        time); with dry_run only count them (arkfs.store.gc)."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


def binding_problem(binding: NewBinding) -> str | None:
    """What makes a binding unfit to become a new version, or None."""
    b = binding
    if not (isinstance(b.ark, str) and b.ark):
        return f"an ARK binding needs a non-empty ARK string, got {b.ark!r}"
    if not (
        isinstance(b.manifest, bytes | FileSlice)
        and isinstance(b.erc, str)
        and isinstance(b.updated, int | float)
        and isinstance(b.message, str)
    ):
        return f"the binding of {b.ark} needs manifest bytes, ERC text, a Unix time and a message"
    if not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in (b.files, b.bytes)
    ):
        return f"the binding of {b.ark} needs counts of files and bytes >= 0"
    if b.version != 0 or b.follows is not None:
        return f"the binding of {b.ark} sets version or follows; leave them out: bind assigns them"
    return None


def version_problems(ark: str, versions: Sequence[tuple[int, int | None]]) -> list[str]:
    """What breaks the numbering of an ARK's (version, follows) pairs, sorted by version.

    Versions are numbered 1..N without gaps, and each follows the one before (v1 none).
    """
    numbers = [v for v, _ in versions]
    problems = []
    missing = sorted(set(range(1, numbers[-1] + 1)) - set(numbers))
    if missing:
        problems.append(
            f"{ark} is missing version{'s' * (len(missing) > 1)} "
            f"{', '.join(map(str, missing))} of 1 to {numbers[-1]}; restore the index from a backup"
        )
    if numbers[0] < 1:
        problems.append(f"{ark} has version {numbers[0]}; restore the index from a backup")
    for version, follows in versions:
        expected = version - 1 if version > 1 else None
        if follows != expected:
            problems.append(
                f"{ark} version {version} follows {follows}, not {expected}; "
                "restore the index from a backup"
            )
    return problems


def hash_problem(what: str, h: object) -> str | None:
    """Why h is not a XET hash, or None."""
    if isinstance(h, bytes) and len(h) == HASH_SIZE:
        return None
    return f"{what} is not a {HASH_SIZE}-byte hash: {h!r}"


def sampled(items: Sequence[_T], sample: int | None) -> Sequence[_T]:
    """All items, or sample of them chosen at random (what `store check --sample` hashes)."""
    if sample is None or sample >= len(items):
        return items
    return random.sample(list(items), sample)


def hash_name(h: bytes, what: str) -> str:
    """The hash string that names h; Rejected if h is not a hash."""
    problem = hash_problem(f"{what} hash", h)
    if problem:
        raise Rejected(problem)
    return hash_to_string(h)


def stored_footer(h: bytes, stored: bytes) -> XorbFooter:
    """The footer of xorb h in its stored form (chunk region and footer), checked against its
    name; Rejected otherwise (put_xorb's rule)."""
    try:
        return named_footer(stored, len(stored), h)
    except XetError as exc:
        raise Rejected(
            f"xorb {hash_to_string(h)} not stored: {exc}; send the whole stored form "
            "(chunk region and footer) under its own hash"
        ) from None


def no_file(file_hash: bytes) -> NotFound:
    """The error of a file no shard registered."""
    return NotFound(
        f"file {hash_name(file_hash, 'file')} is not in the store: "
        "upload the shard that registers it"
    )


def no_version(ark: str, version: int | None, latest: int | None, place: str) -> str:
    """Why version of ark (None: any) is not in place, whose latest version is latest."""
    if latest is None:
        return f"{ark} is not bound in {place}"
    which = "its only version, 1" if latest == 1 else f"one of its versions 1 to {latest}"
    return f"{ark} has no version {version} in {place}; ask for {which}"


def footer_problem(footer_of: FooterOf, xorb: bytes) -> tuple[XorbFooter | None, str | None]:
    """The footer of a stored xorb, or None and why it cannot be had."""
    try:
        return footer_of(xorb), None
    except NotFound:
        return None, f"xorb {hash_to_string(xorb)} is missing"
    except StoreCorrupt as exc:
        return None, f"xorb {hash_to_string(xorb)} is damaged ({exc})"


def file_problem(record: FileRecord, footer_of: FooterOf) -> str | None:
    """What makes a file reconstruction disagree with the stored xorbs, or None."""
    problem = hash_problem("file hash", record.file_hash)
    if problem:
        return problem
    if record.sha256 is not None and len(record.sha256) != SHA256_SIZE:
        return f"SHA-256 of {len(record.sha256)} bytes"
    footers: dict[bytes, XorbFooter] = {}
    for i, term in enumerate(record.terms):
        problem = hash_problem(f"term {i} xorb", term.xorb_hash)
        if problem:
            return problem
        if term.xorb_hash not in footers:
            footer, problem = footer_problem(footer_of, term.xorb_hash)
            if footer is None:
                return f"term {i}: {problem}"
            footers[term.xorb_hash] = footer
    try:
        verify_terms(record.file_hash, record.size, record.terms, footers)
    except XetError as exc:
        return str(exc)
    return None


def dedup_problem(entry: DedupEntry, footer_of: FooterOf) -> str | None:
    """What makes a dedup entry disagree with the stored xorb it points to, or None."""
    problem = hash_problem("chunk hash", entry.chunk_hash) or hash_problem(
        "xorb hash", entry.xorb_hash
    )
    if problem:
        return problem
    footer, problem = footer_problem(footer_of, entry.xorb_hash)
    if footer is None:
        return problem
    if not 0 <= entry.chunk_index < footer.num_chunks:
        return (
            f"chunk index {entry.chunk_index} is outside xorb "
            f"{hash_to_string(entry.xorb_hash)} ({footer.num_chunks} chunks)"
        )
    if footer.chunk_hashes[entry.chunk_index] != entry.chunk_hash:
        return (
            f"chunk {entry.chunk_index} of xorb {hash_to_string(entry.xorb_hash)} has another hash"
        )
    return None


def records_problem(
    files: Sequence[FileRecord], dedup: Sequence[DedupEntry], footer_of: FooterOf
) -> str | None:
    """What makes a shard's file records or dedup entries disagree with the stored xorbs."""
    for i, record in enumerate(files):
        problem = file_problem(record, footer_of)
        if problem:
            return f"file {i}: {problem}"
    for i, entry in enumerate(dedup):
        problem = dedup_problem(entry, footer_of)
        if problem:
            return f"dedup entry {i}: {problem}"
    return None


def checked_footers(sound: dict[bytes, bool], footer_of: FooterOf) -> FooterOf:
    """footer_of for `check`: only xorbs the check found sound (sound[h]); others are
    missing (NotFound) or damaged (StoreCorrupt), already reported once."""

    def footer(h: bytes) -> XorbFooter:
        if h not in sound:
            raise NotFound("not stored")
        if not sound[h]:
            raise StoreCorrupt("see above")
        return footer_of(h)

    return footer


def row_problems(
    files: Iterable[FileRecord], dedup: Iterable[DedupEntry], footer_of: FooterOf
) -> list[str]:
    """One line per indexed file record or dedup entry that disagrees with the xorbs."""
    problems = []
    for record in files:
        problem = file_problem(record, footer_of)
        if problem:
            problems.append(f"file {hash_to_string(record.file_hash)}: {problem}")
    for entry in dedup:
        problem = dedup_problem(entry, footer_of)
        if problem:
            problems.append(f"dedup chunk {hash_to_string(entry.chunk_hash)}: {problem}")
    return problems


class FooterCache:
    """Recently used xorb footers, weighed by their chunks; shared by a server's threads."""

    def __init__(self, chunks: int = FOOTER_CACHE_CHUNKS) -> None:
        self._footers: LRU[bytes, XorbFooter] = LRU(chunks, keep_one=True)
        self._lock = threading.Lock()

    def get(self, h: bytes) -> XorbFooter | None:
        """The cached footer of xorb h, or None."""
        with self._lock:
            return self._footers.get(h)

    def put(self, h: bytes, footer: XorbFooter) -> None:
        """Keep the footer of xorb h."""
        with self._lock:
            self._footers.put(h, footer, footer.num_chunks)
