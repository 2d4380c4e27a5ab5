"""EmbeddedBackend: a LocalStore in this process, behind the same interface as a server.

The rules are the archive service's (arkfs.service.archive_service), the same ones `arkfs serve`
runs, so a caller cannot tell the two apart except by name and speed. This is the thin
async wrapper: each call runs in a worker thread under one CapacityLimiter, and service
errors become backend errors in one place (_run).
"""

import secrets
from collections.abc import Callable, Collection
from typing import TypeVar

import trio

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.archive.withdrawal import as_withdrawn
from arkfs.ark.erc import Erc
from arkfs.backend.base import BadReply, NotBound, Refused, Unreachable
from arkfs.service.archive_service import ArchiveService
from arkfs.store.errors import NotFound, Rejected, StoreCorrupt, StoreError
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction
from arkfs.xet.shard import Shard
from arkfs.xet.xorb import XorbFooter

T = TypeVar("T")


def _fetch_key(xorb_hash: bytes) -> str:
    """Where a reconstruction says a xorb's bytes are: fetch() reads them from the store."""
    return "embedded:" + hash_to_string(xorb_hash)


class EmbeddedBackend:
    """The archive side in a local store directory; it owns the store and closes it."""

    def __init__(self, store: LocalStore, *, threads: int = 8) -> None:
        self.store = store
        self.name = f"embedded:{store.root}"
        # A dedup key of its own: nothing outside this process matches its replies.
        self.service = ArchiveService(
            store, secrets.token_bytes(32), f"in the embedded store {store.root}"
        )
        self._limiter = trio.CapacityLimiter(threads)

    def __repr__(self) -> str:
        return f"EmbeddedBackend({str(self.store.root)!r})"

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking service work in a worker thread; its errors become backend errors.

        NotFound becomes NotBound, Rejected Refused, StoreCorrupt BadReply, and any other
        store or OS error Unreachable; callers that know better catch NotBound themselves.
        """
        try:
            return await trio.to_thread.run_sync(fn, *args, limiter=self._limiter)
        except NotFound as exc:
            raise NotBound(str(exc)) from None
        except Rejected as exc:
            raise Refused(str(exc)) from None
        except StoreCorrupt as exc:
            raise BadReply(str(exc)) from None
        except StoreError as exc:
            raise Unreachable(f"embedded store {self.store.root}: {exc}") from None
        except OSError as exc:
            raise Unreachable(
                f"embedded store {self.store.root}: {exc.strerror or exc}; "
                "check the disk and permissions"
            ) from None

    # --- versions ------------------------------------------------------------------------

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        archive, _, withdrawn = await self._run(self.service.resolve, ark, version)
        return archive if withdrawn is None else as_withdrawn(archive, withdrawn)

    async def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        return await self._run(self.service.record, ark)

    async def versions(self, ark: str) -> list[VersionInfo]:
        return await self._run(self.service.versions, ark)

    async def list_archives(self, prefix: str = "") -> list[str]:
        return await self._run(self.service.list_archives, prefix)

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        archive = await self._run(
            self.service.bind, manifest.ark, manifest.to_msgpack(), erc.to_anvl(), message
        )
        return archive.version

    async def bind_again(self, ark: str, version: int, erc: Erc, message: str = "") -> VersionInfo:
        return await self._run(self.service.bind_again, ark, version, erc.to_anvl(), message)

    # --- CAS reads -------------------------------------------------------------------------

    def _plan(self, file_hash: bytes, start: int, end: int) -> Reconstruction:
        record = self.service.file(file_hash)
        return self.service.reconstruction(record, start, end, _fetch_key)

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        return await self._run(self._plan, file_hash, start, end)  # it sends no footers

    async def _xorb_call(self, fn: Callable[..., T], xorb_hash: bytes, *args: object) -> T:
        """A read of a stored xorb: one that a reconstruction names and is missing is damage."""
        try:
            return await self._run(fn, xorb_hash, *args)
        except NotBound:
            raise BadReply(
                f"xorb {hash_to_string(xorb_hash)} is missing from the embedded store "
                f"{self.store.root}; run `arkfs store check`"
            ) from None

    async def fetch(self, xorb_hash: bytes, fr: FetchRange) -> bytes:
        return await self._xorb_call(
            self.store.read_xorb, xorb_hash, fr.byte_start, fr.byte_end + 1
        )

    async def footer(self, xorb_hash: bytes, fr: FetchRange) -> XorbFooter:
        """The store checks the footer against the xorb's name before it returns it."""
        return await self._xorb_call(self.store.xorb_footer, xorb_hash)

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        return await self._run(self.service.has_file, file_hash, size)

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        """A dedup shard with keyed hashes, as a server sends: match it with dedup_matches."""
        return await self._run(self.service.dedup_shard, chunk_hash)

    # --- CAS writes ------------------------------------------------------------------------

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        return await self._run(self.service.put_xorb, xorb_hash, data)

    async def upload_shard(self, data: bytes) -> bool:
        return await self._run(self.service.put_shard, data)

    async def aclose(self) -> None:
        await trio.to_thread.run_sync(self.store.close, limiter=self._limiter)
