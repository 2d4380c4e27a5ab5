"""An in-memory Backend for unit tests of the data path, and faults to inject into it.

FakeBackend serves real xorbs, footers and reconstructions, built with arkfs.xet from
files held in memory (tests.backend.content.build_content, the way a publisher builds
them). It is a whole Backend, but only the CAS reads the data path uses (reconstruction,
fetch, footer) serve anything; it binds no archive and takes no uploads.
Faults are queued per operation and each call takes the next one, in the style of
mountpoint-s3's failure-injecting test clients: an error to raise (Unreachable,
Unauthorized, BadReply), a Stall (the call blocks until the test releases it), or a
Flip (a wrong byte in the fetched range, or in a chunk hash of the footer). expire_urls()
makes every fetch URL handed out so far refused, as a server does once its URLs expire.
"""

from collections import Counter, deque
from collections.abc import Collection
from dataclasses import dataclass, replace
from urllib.parse import parse_qs, urlsplit

import trio

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.backend.base import BackendError, NotBound, Refused, Unauthorized
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction, plan_range
from arkfs.xet.shard import Shard, parse_shard
from arkfs.xet.xorb import SerializedXorb, XorbFooter
from tests.backend.content import build_content

RECONSTRUCTION, FETCH, FOOTER = OPERATIONS = "reconstruction", "fetch", "footer"


@dataclass(frozen=True)
class FakeFile:
    """A file the fake serves: its bytes, XET hash, size, and the xorbs that hold it."""

    data: bytes
    hash: bytes
    size: int
    xorbs: tuple[bytes, ...]


class Stall:
    """A fault that holds a call until release(); reached is set once a call waits on it."""

    def __init__(self) -> None:
        self.reached = trio.Event()
        self._released = trio.Event()

    def release(self) -> None:
        self._released.set()

    async def hold(self) -> None:
        self.reached.set()
        await self._released.wait()


class Flip:
    """A fault that answers with one byte wrong: in the fetched range, or in the footer."""


Fault = BackendError | Stall | Flip


class FakeBackend:
    """The CAS side of an archive holding files, in memory, with faults on demand."""

    name = "fake"

    def __init__(self, files: dict[str, bytes], *, max_chunks: int = 6) -> None:
        content = build_content(files, max_chunks=max_chunks)
        blocks = {b.file_hash: b for b in parse_shard(content.shard).files}
        self.files = {
            name: FakeFile(
                f.data,
                f.hash,
                len(f.data),
                tuple(dict.fromkeys(t.xorb_hash for t in blocks[f.hash].terms)),
            )
            for name, f in content.files.items()
        }
        self.xorbs: dict[bytes, SerializedXorb] = {x.hash: x for x in content.xorbs}
        self._terms = {h: b.terms for h, b in blocks.items()}
        self._faults: dict[str, deque[Fault]] = {op: deque() for op in OPERATIONS}
        self._url_version = 0
        self.calls: Counter[str] = Counter()  # calls of each operation, faulty ones too

    # --- faults ----------------------------------------------------------------------------

    def inject(self, operation: str, *faults: Fault) -> None:
        """The next calls of operation (RECONSTRUCTION, FETCH, FOOTER) meet these faults."""
        self._faults[operation].extend(faults)

    def stall(self, operation: str = FETCH) -> Stall:
        """The next call of operation blocks until the returned Stall is released."""
        stall = Stall()
        self.inject(operation, stall)
        return stall

    def expire_urls(self) -> None:
        """Refuse (Unauthorized) every fetch URL handed out so far."""
        self._url_version += 1

    async def _fault(self, operation: str) -> Flip | None:
        """Count a call and meet its fault: raise an error, wait out a stall, or say flip."""
        self.calls[operation] += 1
        fault = self._faults[operation].popleft() if self._faults[operation] else None
        if isinstance(fault, BackendError):
            raise fault
        if isinstance(fault, Stall):
            await fault.hold()
        await trio.lowlevel.checkpoint()
        return fault if isinstance(fault, Flip) else None

    # --- the Backend methods the data path calls -------------------------------------------

    async def reconstruction(
        self, file_hash: bytes, start: int, end: int, held: Collection[bytes] = ()
    ) -> Reconstruction:
        await self._fault(RECONSTRUCTION)
        terms = self._terms.get(file_hash)
        if terms is None:
            raise NotBound(f"no file {hash_to_string(file_hash)}")
        size = sum(t.unpacked_length for t in terms)
        if not 0 <= start < end or start >= size:
            raise Refused(f"bytes {start}..{end} are past the end ({size} bytes)")
        planned, offset = plan_range(
            terms, lambda xh: self.xorbs[xh].footer.chunk_sizes(), start, min(end, size)
        )
        fetch: dict[bytes, tuple[FetchRange, ...]] = {}
        for t in planned:
            lo, hi = self.xorbs[t.xorb_hash].footer.packed_range(t.start, t.end)
            url = f"fake://{hash_to_string(t.xorb_hash)}?v={self._url_version}"
            fr = FetchRange(url, t.start, t.end, lo, hi - 1)
            fetch[t.xorb_hash] = (*fetch.get(t.xorb_hash, ()), fr)
        return Reconstruction(tuple(planned), offset, fetch)

    async def fetch(self, xorb_hash: bytes, fr: FetchRange) -> bytes:
        flip = await self._fault(FETCH)
        if int(parse_qs(urlsplit(fr.url).query)["v"][0]) != self._url_version:
            raise Unauthorized(f"{fr.url} has expired")
        data = self.xorbs[xorb_hash].data[fr.byte_start : fr.byte_end + 1]
        if flip:
            middle = len(data) // 2
            data = data[:middle] + bytes([data[middle] ^ 0x20]) + data[middle + 1 :]
        return data

    async def footer(self, xorb_hash: bytes, fr: FetchRange) -> XorbFooter:
        flip = await self._fault(FOOTER)
        footer = self.xorbs[xorb_hash].footer
        if flip:
            first = footer.chunk_hashes[0]
            wrong = bytes([first[0] ^ 1]) + first[1:]
            footer = replace(footer, chunk_hashes=(wrong, *footer.chunk_hashes[1:]))
        return footer

    # --- the rest of a Backend, which the data path never calls ------------------------------

    async def archive(self, ark: str, version: int | None = None) -> Archive:
        raise NotBound(f"{ark}: a FakeBackend binds no archive")

    async def versions(self, ark: str) -> list[VersionInfo]:
        raise NotBound(f"{ark}: a FakeBackend binds no archive")

    async def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        raise NotBound(f"{ark}: a FakeBackend binds no archive")

    async def list_archives(self, prefix: str = "") -> list[str]:
        return []

    async def bind(self, manifest: Manifest, erc: Erc, message: str = "") -> VersionInfo:
        raise Refused("a FakeBackend binds nothing")

    async def bind_again(self, ark: str, version: int, erc: Erc, message: str = "") -> VersionInfo:
        raise Refused("a FakeBackend binds nothing")

    async def has_file(self, file_hash: bytes, size: int) -> bool:
        return file_hash in self._terms

    async def query_dedup(self, chunk_hash: bytes) -> Shard | None:
        return None

    async def upload_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        raise Refused("a FakeBackend takes no uploads")

    async def upload_shard(self, data: bytes) -> bool:
        raise Refused("a FakeBackend takes no uploads")

    async def aclose(self) -> None:
        pass
