"""The narrow store interface, its records, and the consistency rules every backend enforces.

Backends (the local directory with SQLite now; an S3-compatible object store with PostgreSQL
later) implement Store. Methods are synchronous: the async server calls them through
trio.to_thread. put_shard checks records against the stored xorb footers with file_problem
and dedup_problem, and check() applies the same rules to what is already indexed.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

from arkfs.store.errors import NotFound, StoreCorrupt
from arkfs.xet.constants import HASH_SIZE
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.trust import verify_terms
from arkfs.xet.xorb import XorbFooter

SHA256_SIZE = 32


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
class Binding:
    """An ARK (normalized key) bound to its manifest (opaque msgpack) and ERC record (ANVL)."""

    ark: str
    manifest: bytes
    erc: str
    updated: float  # Unix time of the binding


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Counts and sizes of what a store holds."""

    xorbs: int
    xorb_bytes: int
    shards: int
    shard_bytes: int
    files: int
    dedup_chunks: int
    bindings: int


FooterOf = Callable[[bytes], XorbFooter]


@runtime_checkable
class Store(Protocol):
    """Xorbs, shards, file reconstructions, global-dedup chunks and ARK bindings.

    A put returns only once what it stored is durable (acknowledged). Xorbs and shards are
    never removed, so a row that refers to them stays valid.
    """

    def has_xorb(self, h: bytes) -> bool:
        """Is xorb h stored?"""
        ...

    def put_xorb(self, h: bytes, stored: bytes) -> bool:
        """Store xorb h in its stored form (chunk region and footer); False if already there.

        The caller has validated the chunks (parse_xorb); the store checks the footer and name.
        """
        ...

    def xorb_size(self, h: bytes) -> int:
        """Size in bytes of stored xorb h."""
        ...

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        """Bytes [start, end) of stored xorb h."""
        ...

    def xorb_footer(self, h: bytes) -> XorbFooter:
        """The footer of stored xorb h, checked against its name."""
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

    def dedup_lookup(self, chunk_hash: bytes) -> list[ChunkLocation]:
        """Every stored location of a global-dedup chunk; empty if none."""
        ...

    def bind(self, binding: Binding) -> None:
        """Bind an ARK to its manifest and ERC record, replacing an earlier binding."""
        ...

    def get_binding(self, ark: str) -> Binding:
        """The binding of an ARK (normalized key)."""
        ...

    def list_bindings(self, prefix: str = "") -> list[str]:
        """The bound ARKs that start with prefix, sorted."""
        ...

    def stats(self) -> StoreStats:
        """What the store holds."""
        ...

    def check(self, repair: bool = False) -> list[str]:
        """One line per damage found; repair removes leftovers of interrupted writes only."""
        ...

    def close(self) -> None:
        """Release the store's resources."""
        ...


def hash_problem(what: str, h: object) -> str | None:
    """Why h is not a XET hash, or None."""
    if isinstance(h, bytes) and len(h) == HASH_SIZE:
        return None
    return f"{what} is not a {HASH_SIZE}-byte hash: {h!r}"


def _footer_problem(footer_of: FooterOf, xorb: bytes) -> tuple[XorbFooter | None, str | None]:
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
            footer, problem = _footer_problem(footer_of, term.xorb_hash)
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
    footer, problem = _footer_problem(footer_of, entry.xorb_hash)
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
