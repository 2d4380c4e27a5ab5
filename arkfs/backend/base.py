"""The Backend interface: one archive side, embedded (a local store) or remote (`arkfs serve`).

Everything is async and runs on trio; a backend offloads its own blocking work. Reads give
hints (reconstructions, fetch URLs), never trusted bytes: callers verify every chunk
against its hash. Errors are BackendError subclasses with one-line messages. An archive is
an arkfs.archive.record.Archive, the one type every layer shares.
"""

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.xet.reconstruction import FetchRange, Reconstruction
from arkfs.xet.shard import Shard
from arkfs.xet.xorb import XorbFooter


class BackendError(Exception):
    """Base class: something a backend could not do; the message says what to do."""


class NotBound(BackendError, LookupError):
    """No archive is bound to that ARK, or no file has that hash."""


class Unreachable(BackendError):
    """The server did not answer (after retries): connection refused, timeouts, 5xx."""


class Unauthorized(BackendError):
    """The server refused the token (401) or its scope (403)."""


class BadReply(BackendError):
    """The server's reply or the stored data is malformed or fails verification."""


class Refused(BackendError):
    """The backend refused what we sent (a 4xx other than auth): the message says why."""


class CasReader(Protocol):
    """What the mount's data path needs of a backend: the CAS reads of a file's bytes."""

    name: str  # for messages and cache keys: the base URL, or 'embedded:<dir>'

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        """Terms and fetch ranges covering bytes [start, end) of a file (end > start); held
        names xorbs whose footers the caller keeps, which the reply may leave out."""
        ...

    async def fetch(self, xorb_hash: bytes, fr: FetchRange) -> bytes:
        """The packed bytes of fr (byte_start..byte_end inclusive) of a xorb.

        Returns exactly byte_end - byte_start + 1 bytes or raises; an expired URL raises
        Unauthorized, and the caller asks for a new reconstruction.
        """
        ...

    async def footer(self, xorb_hash: bytes, fr: FetchRange) -> XorbFooter:
        """The footer of a xorb, located through any of its fetch ranges; checked against
        the xorb hash (footer.verify and name) before it is returned."""
        ...


@runtime_checkable
class Blamable(Protocol):
    """A backend of several servers (mirrors), told which one sent what failed its check so
    the next attempt asks another; a backend of one server has nothing to blame."""

    def blame(self, xorb_hash: bytes, why: str) -> None:
        """The bytes of xorb_hash last fetched failed their check."""
        ...

    def blame_reconstruction(self, file_hash: bytes, why: str) -> None:
        """The last reconstruction of file_hash failed verification."""
        ...


@runtime_checkable
class Batched(Protocol):
    """A backend that answers many files' reconstructions in one request (a get of many
    small files would otherwise ask once per file)."""

    async def reconstructions(
        self, file_hashes: Sequence[bytes], held: Collection[bytes] = ()
    ) -> dict[bytes, Reconstruction]:
        """The whole-file reconstructions of file_hashes (at most BATCH_FILES) the backend
        holds; a file it does not hold is left out, and {} says it has no batch route: ask
        each file alone. held as in reconstruction()."""
        ...


class Backend(CasReader, Protocol):
    """An archive side: the NMA (bindings) and the CAS (files, xorbs, dedup)."""

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        """Version version of the archive bound to a normalized ark:NAAN/Name, its latest
        when None; NotBound if there is no such archive or version."""
        ...

    async def versions(self, ark: str) -> list[VersionInfo]:
        """Every version of the archive bound to a normalized ark:NAAN/Name, oldest first;
        NotBound if none is."""
        ...

    async def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        """The latest version of the archive bound to a normalized ark:NAAN/Name and its ERC
        record, as archive() gives them, without its manifest; NotBound if none is."""
        ...

    async def list_archives(self, prefix: str = "") -> list[str]:
        """Normalized ARKs of the bound archives starting with prefix (e.g. 'ark:12345/')."""
        ...

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        """Bind the next version of manifest.ark to manifest, erc and message, and say which
        version it is; every file hash must be in the CAS. Earlier versions stay."""
        ...

    async def bind_again(self, ark: str, version: int, erc: Erc, message: str = "") -> VersionInfo:
        """Bind the next version of ark to the manifest of its version version as the archive
        side holds it, with erc and message, and say which version it is: a metadata-only
        version, for which no manifest travels or is parsed. NotBound if there is no such
        version."""
        ...

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        """Does the CAS hold a reconstruction of that file with that size?"""
        ...

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        """Global deduplication: a shard (keyed hashes) of xorbs holding the chunk, or None."""
        ...

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        """Store a serialized xorb; False if it was already there."""
        ...

    async def upload_shard(self, data: bytes) -> bool:
        """Register a shard (upload form); False if it was already there."""
        ...

    async def aclose(self) -> None:
        """Release connections and threads."""
        ...
