"""EmbeddedBackend: a LocalStore in this process, behind the same interface as a server.

Every store call blocks (SQLite, files, hashing), so each runs in a worker thread under one
CapacityLimiter. Reads and uploads go through the same planning and checks the server uses
(arkfs.store.plan), so a caller cannot tell the two apart except by name and speed.
"""

import secrets
import time
from collections.abc import Callable
from typing import TypeVar

import blake3
import trio

from arkfs.ark.erc import Erc
from arkfs.ark.errors import ErcError, ManifestError
from arkfs.ark.manifest import Manifest
from arkfs.backend.base import Archive, BadReply, NotBound, Refused, Unreachable
from arkfs.store.base import Binding
from arkfs.store.errors import NotFound, Rejected, StoreCorrupt, StoreError
from arkfs.store.local import LocalStore
from arkfs.store.plan import dedup_blocks, plan_reconstruction, shard_records
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import ZERO_HASH, hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction
from arkfs.xet.shard import Shard, keyed_dedup_shard
from arkfs.xet.xorb import XorbFooter, parse_xorb

DEDUP_KEY_TTL = 3600  # seconds a dedup reply's keyed hashes may be matched, as the server
T = TypeVar("T")


class EmbeddedBackend:
    """The archive side in a local store directory; it owns the store and closes it."""

    def __init__(self, store: LocalStore, *, threads: int = 8) -> None:
        self.store = store
        self.name = f"embedded:{store.root}"
        self._limiter = trio.CapacityLimiter(threads)
        self._dedup_key = secrets.token_bytes(32)

    def __repr__(self) -> str:
        return f"EmbeddedBackend({str(self.store.root)!r})"

    async def _run(self, fn: Callable[..., T], *args: object) -> T:
        """Run blocking store work in a worker thread; store errors become backend errors.

        NotFound becomes NotBound, Rejected Refused, StoreCorrupt BadReply, and any other
        store or OS error Unreachable; callers that know better catch NotFound themselves.
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

    # --- bindings --------------------------------------------------------------------------

    def _load(self, ark: str) -> Archive:
        try:
            binding = self.store.get_binding(ark)
        except NotFound:
            raise NotBound(
                f"no archive is bound to {ark} in the embedded store {self.store.root}; "
                f"publish one with `arkfs publish DIR --ark {ark}`"
            ) from None
        try:
            manifest = Manifest.from_msgpack(binding.manifest)
            erc = Erc.from_anvl(binding.erc)
        except (ManifestError, ErcError) as exc:
            raise BadReply(
                f"the binding of {ark} in {self.store.root} is damaged: {exc}; publish it again"
            ) from None
        if manifest.ark != ark:
            raise BadReply(
                f"the binding of {ark} in {self.store.root} holds the manifest of {manifest.ark}"
            )
        return Archive(manifest, erc, binding.updated)

    async def archive(self, ark: str) -> Archive:
        return await self._run(self._load, ark)

    async def list_archives(self, prefix: str = "") -> list[str]:
        return await self._run(self.store.list_bindings, prefix)

    def _bind(self, manifest: Manifest, erc: Erc) -> None:
        checked: dict[bytes, int] = {ZERO_HASH: 0}  # the empty file needs no storage
        for entry in manifest.files:
            assert entry.xet_hash is not None  # Manifest guarantees it for files
            name = hash_to_string(entry.xet_hash)
            if entry.xet_hash not in checked:
                try:
                    checked[entry.xet_hash] = self.store.get_file(entry.xet_hash).size
                except NotFound:
                    raise Refused(
                        f"cannot bind {manifest.ark}: {entry.path} has file hash {name}, which "
                        f"is not in the store at {self.store.root}; upload its xorbs and shard"
                    ) from None
            if checked[entry.xet_hash] != entry.size:
                raise Refused(
                    f"cannot bind {manifest.ark}: {entry.path} is {entry.size} bytes in the "
                    f"manifest, but the store holds file {name} of {checked[entry.xet_hash]}"
                )
        self.store.bind(
            Binding(
                manifest.ark,
                manifest.to_msgpack(),
                erc.to_anvl(),
                time.time(),
                files=len(manifest.files),
                bytes=manifest.total_size,
            )
        )

    async def bind(self, manifest: Manifest, erc: Erc) -> None:
        await self._run(self._bind, manifest, erc)

    # --- CAS reads -------------------------------------------------------------------------

    def _plan(self, file_hash: bytes, start: int, end: int) -> Reconstruction:
        name = hash_to_string(file_hash)
        try:
            record = self.store.get_file(file_hash)
        except NotFound:
            raise NotBound(f"no file {name} in the embedded store {self.store.root}") from None
        if not 0 <= start < end or start >= record.size:
            raise Refused(
                f"bytes {start}..{end} of file {name} are past its end ({record.size} bytes)"
            )
        return plan_reconstruction(
            self.store, record, start, end, lambda xh: "embedded:" + hash_to_string(xh)
        )

    async def reconstruction(self, file_hash: bytes, start: int, end: int) -> Reconstruction:
        return await self._run(self._plan, file_hash, start, end)

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

    def _has_file(self, file_hash: bytes, size: int) -> bool:
        try:
            return self.store.get_file(file_hash).size == size
        except NotFound:
            return False

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        return await self._run(self._has_file, file_hash, size)

    def _dedup(self, chunk_hash: bytes) -> Shard | None:
        blocks = dedup_blocks(self.store, chunk_hash)
        if not blocks:
            return None
        now = int(time.time())
        return keyed_dedup_shard(
            blocks, self._dedup_key, creation_timestamp=now, key_expiry=now + DEDUP_KEY_TTL
        )

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        """A dedup shard with keyed hashes, as a server sends: match it with dedup_matches."""
        return await self._run(self._dedup, chunk_hash)

    # --- CAS writes ------------------------------------------------------------------------

    def _put_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        try:
            parsed = parse_xorb(data, xorb_hash)
        except XetError as exc:
            raise Refused(f"invalid xorb {hash_to_string(xorb_hash)}: {exc}") from None
        return self.store.put_xorb(xorb_hash, parsed.serialize())

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        return await self._run(self._put_xorb, xorb_hash, data)

    def _put_shard(self, data: bytes) -> bool:
        records, dedup = shard_records(self.store, data)
        return self.store.put_shard(blake3.blake3(data).digest(), data, records, dedup)

    async def upload_shard(self, data: bytes) -> bool:
        return await self._run(self._put_shard, data)

    async def aclose(self) -> None:
        await trio.to_thread.run_sync(self.store.close, limiter=self._limiter)
