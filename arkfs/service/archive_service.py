"""ArchiveService: every archive-side rule over a Store, for `arkfs serve` and the embedded
backend alike, so a caller cannot tell the two apart by construction.

Synchronous: every method may block (SQLite, files, hashing), so async callers run it in a
worker thread. Errors are store errors, mapped once at each boundary: NotFound (nothing by
that name), Rejected (bad input; OutOfRange for a byte range), StoreCorrupt (stored data is
damaged), and any other StoreError or OSError (the store is unavailable).
"""

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

import blake3

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.archive.withdrawal import MESSAGE as TOMBSTONE_MESSAGE
from arkfs.archive.withdrawal import (
    Withdrawal,
    covering,
    with_withdrawal,
    withdrawal_in,
    without_withdrawal,
)
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ArkError
from arkfs.store.base import Binding, DedupEntry, FileRecord, Store
from arkfs.store.errors import NotFound, OutOfRange, Rejected, StoreCorrupt
from arkfs.store.files import check_file, file_sha256
from arkfs.store.shards import EMPTY_SHA256, Progress, file_record, shard_problem
from arkfs.util.lru import LRU
from arkfs.util.msgpack_file import FileSlice
from arkfs.xet.constants import MAX_XORB_ACCEPTED
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import ZERO_HASH, hash_to_string
from arkfs.xet.reconstruction import FetchRange, Reconstruction, plan_range
from arkfs.xet.shard import (
    CasBlock,
    Shard,
    cas_block,
    keyed_dedup_shard,
    parse_shard,
)
from arkfs.xet.xorb import XorbFooter, footer_record, stored_xorb

MAX_SHARD_SIZE = 64 * 1024 * 1024  # Denial of Service Considerations
DEDUP_KEY_TTL = 3600  # seconds one dedup key is used, and its replies' keyed hashes may be matched
ARCHIVE_CACHE = 16  # parsed archive versions kept in memory
EMPTY_FILE = FileRecord(ZERO_HASH, 0, EMPTY_SHA256, ())  # the empty file: it needs no storage
BIND_BATCH = 4096  # files a bind looks up at a time
FileRow = tuple[int, bytes, int, bytes | None]  # position, XET hash, size, SHA-256 or None
T = TypeVar("T")


def clip_range(size: int, start: int, end: int, what: str) -> tuple[int, int]:
    """Bytes [start, end) of what (size bytes), end clipped to its end; OutOfRange unless
    the range holds at least one of its bytes."""
    if start >= size:
        raise OutOfRange(f"{what}: bytes {start}..{end} start past its end ({size} bytes)")
    if not 0 <= start < end:
        raise OutOfRange(f"{what}: bytes {start}..{end} are no range; start must be below end")
    return start, min(end, size)


def _merge_spans(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, disjoint chunk spans covering spans; overlapping or touching ones merge.

    hf_xet fails ("range end out of bounds") on overlapping fetch ranges of one xorb,
    which a file whose chunks repeat would otherwise get.
    """
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class ArchiveService:
    """The archive side over a Store: versions, files, reconstructions, intake and dedup.

    place says where the store is, in messages ('on this server', 'in the embedded store
    DIR'). dedup_secret (32 bytes) keys the dedup replies (Keyed Hash Security).
    """

    def __init__(self, store: Store, dedup_secret: bytes, place: str) -> None:
        if len(dedup_secret) != 32:
            raise ValueError(f"the dedup secret must be 32 bytes, got {len(dedup_secret)}")
        self.store = store
        self.place = place
        self._dedup_secret = dedup_secret
        self._archives: LRU[tuple[str, int], Archive] = LRU(ARCHIVE_CACHE)  # by ARK, version
        self._lock = threading.Lock()  # guards _archives: callers run in many threads

    # --- archives ---------------------------------------------------------------------------

    def bind(self, ark: str, manifest: bytes | FileSlice, erc: str, message: str = "") -> Archive:
        """Bind the next version of ark (a normalized ark:NAAN/Name) to manifest (msgpack,
        or where a file holds it), erc (ANVL text) and message; the earlier versions stay
        as they are.

        Both must parse, the manifest must be of ark, and every file it lists must be
        stored with its size and, if it gives one, its SHA-256 (so every digest a binding
        serves is verified); otherwise Rejected names what is wrong and nothing is bound.
        A stored file's SHA-256 was checked at its shard's intake; one whose shard gave none
        is hashed from the store here, once per bind.
        """
        try:
            if isinstance(manifest, FileSlice):  # never held whole besides its parse
                parsed = Manifest.from_msgpack_file(manifest)
            else:
                parsed = Manifest.from_msgpack(manifest)
        except ArkError as exc:
            raise Rejected(f"bind {ark}: {exc}") from None
        if parsed.ark != ark:
            raise Rejected(f"bind {ark}: the manifest is of {parsed.ark}; bind it there")
        record, erc = _bound_erc(ark, erc, message)
        self._check_files(ark, parsed, self._unchecked(ark, parsed))
        created, count, size = time.time(), parsed.file_count, parsed.total_size
        binding = Binding(ark, manifest, erc, created, message=message, files=count, bytes=size)
        number = self.store.bind(binding)
        # Versions are numbered without gaps, each following the one before (version_problems).
        follows = number - 1 if number > 1 else None
        archive = Archive(
            parsed, record, VersionInfo(ark, number, created, message, follows, count, size)
        )
        with self._lock:
            self._archives.put((ark, number), archive)
        return archive

    def bind_again(self, ark: str, version: int, erc: str, message: str = "") -> VersionInfo:
        """Bind the next version of ark to the manifest of its version version as stored,
        with erc (ANVL text) and message: a metadata-only version. The manifest is neither
        parsed nor checked (its files were when version was bound, and the files of a bound
        version are never collected), nor copied through here, so this costs the same
        whatever the number of files. NotFound if there is no such version; Rejected if erc
        does not parse."""
        every = self.versions(ark)
        base = next((v for v in every if v.version == version), None)
        if base is None:
            raise NotFound(
                f"{ark} has no version {version} {self.place}; its latest is {every[-1].version}"
            )
        record, erc = _bound_erc(ark, erc, message)
        created = time.time()
        number = self.store.bind_again(ark, version, erc, created, message)
        follows = number - 1 if number > 1 else None
        info = VersionInfo(ark, number, created, message, follows, base.files, base.bytes)
        with self._lock:
            parsed = self._archives.get((ark, version))  # the same manifest: never parsed twice
            if parsed is not None:
                self._archives.put((ark, number), Archive(parsed.manifest, record, info))
        return info

    def record(self, ark: str) -> tuple[VersionInfo, Erc]:
        """The latest version of ark and its ERC record as a reader sees it (with the
        withdrawal that covers it, if any), without parsing its manifest."""
        every = self.versions(ark)
        latest = every[-1]
        with self._lock:
            cached = self._archives.get((ark, latest.version))
        try:
            erc = cached.erc if cached else Erc.from_anvl(self.store.get_erc(ark, latest.version))
        except ArkError as exc:
            raise StoreCorrupt(
                f"version {latest.version}: the ERC record of {ark} {self.place} is damaged "
                f"({exc}); bind it again"
            ) from None
        withdrawn = self.withdrawal(ark, latest.version, every)
        return latest, erc if withdrawn is None else with_withdrawal(erc, withdrawn)

    def _unchecked(self, ark: str, parsed: Manifest) -> Iterable[FileRow]:
        """The files parsed lists that the latest version of ark does not list alike (XET
        hash, size and SHA-256): its files were checked when it was bound, and the files
        of a bound version are never collected. A metadata-only version, whose counts,
        sizes and columns match, has none; for the rest a republish looks up only the files
        it changed (all 100,000 of a tree cost 0.4 s)."""
        try:
            latest = self.versions(ark)[-1]
            before = self.archive(ark, latest.version).manifest.entries
        except (NotFound, StoreCorrupt):  # no version to lean on: every file is checked
            return parsed.entries.file_hashes()
        same = (latest.files, latest.bytes) == (parsed.file_count, parsed.total_size)
        if same and before.same_files(parsed.entries):
            return ()
        return parsed.entries.files_unlike(before)

    def _check_files(self, ark: str, parsed: Manifest, files: Iterable[FileRow]) -> None:
        """Rejected unless each of files (rows of parsed) is stored with its size and
        SHA-256."""
        digests: dict[bytes, bytes] = {}
        for batch in _batched(files, BIND_BATCH):
            stored = self._file_sizes([xet_hash for _, xet_hash, _, _ in batch])
            for i, xet_hash, size, sha256 in batch:
                problem = None
                if xet_hash not in stored:
                    problem = (
                        f"file {hash_to_string(xet_hash)} is not {self.place}; "
                        "upload its xorbs and shard"
                    )
                elif stored[xet_hash][0] != size:
                    problem = (
                        f"size {size}, but file {hash_to_string(xet_hash)} {self.place} "
                        f"has {stored[xet_hash][0]} bytes"
                    )
                elif sha256 is not None:
                    expected = stored[xet_hash][1]
                    if expected is None:  # its shard gave none: hashed from the store, once
                        if xet_hash not in digests:
                            digests[xet_hash] = self._sha256(self.file(xet_hash))
                        expected = digests[xet_hash]
                    if expected != sha256:
                        problem = (
                            f"sha256 {sha256.hex()}, but file {hash_to_string(xet_hash)} "
                            f"hashes to {expected.hex()}; give its SHA-256 or none"
                        )
                if problem is not None:
                    path = parsed.entries.path(i)
                    raise Rejected(f"bind {ark}: entry {path!r}: {problem}")

    def _file_sizes(self, hashes: list[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        """Size and SHA-256 of the stored files among hashes (the empty file needs none)."""
        return self.store.file_sizes(hashes) | {ZERO_HASH: (EMPTY_FILE.size, EMPTY_FILE.sha256)}

    def _sha256(self, stored: FileRecord) -> bytes:
        """A stored file's SHA-256: checked at its shard's intake, or hashed from its bytes."""
        if stored.sha256 is not None:
            return stored.sha256
        return file_sha256(self.store, self.bound_file(stored.file_hash))

    def versions(self, ark: str) -> list[VersionInfo]:
        """Every version of ark (a normalized ark:NAAN/Name), oldest first; NotFound if none."""
        try:
            return self.store.list_versions(ark)
        except NotFound:
            raise NotFound(
                f"{ark} is not bound {self.place}; publish one with `arkfs publish DIR --ark {ark}`"
            ) from None

    def archive(self, ark: str, version: int | None = None) -> Archive:
        """Version version of the archive bound to ark (a normalized ark:NAAN/Name), its
        latest when None; parsed once per version, as versions never change.

        NotFound if there is no such archive or version; StoreCorrupt if it is damaged.
        """
        if version is None:
            version = self.versions(ark)[-1].version
        with self._lock:
            cached = self._archives.get((ark, version))
        if cached is not None:
            return cached
        try:
            binding = self.store.get_binding(ark, version)
        except NotFound:
            latest = self.versions(ark)[-1].version
            which = "its only version is 1" if latest == 1 else f"its versions are 1 to {latest}"
            raise NotFound(f"{ark} has no version {version} {self.place}; {which}") from None
        try:
            manifest = Manifest.from_msgpack(binding.manifest)
            erc = Erc.from_anvl(binding.erc)
        except ArkError as exc:
            raise StoreCorrupt(
                f"version {version}: the binding of {ark} {self.place} is damaged ({exc}); "
                "bind it again"
            ) from None
        if manifest.ark != ark:
            raise StoreCorrupt(
                f"version {version}: the binding of {ark} {self.place} holds the manifest of "
                f"{manifest.ark}; bind it again"
            )
        b = binding
        info = VersionInfo(ark, b.version, b.updated, b.message, b.follows, b.files, b.bytes)
        archive = Archive(manifest, erc, info)
        with self._lock:
            self._archives.put((ark, version), archive)
        return archive

    def resolve(
        self, ark: str, version: int | None
    ) -> tuple[Archive, list[VersionInfo], Withdrawal | None]:
        """The version of ark asked for (None: the latest), every version, and the withdrawal
        that covers it. The list is read first and the latest taken from it, so the two
        agree."""
        every = self.versions(ark)
        archive = self.archive(ark, every[-1].version if version is None else version)
        return archive, every, self.withdrawal(ark, archive.version.version, every)

    def withdrawal(self, ark: str, version: int, versions: list[VersionInfo]) -> Withdrawal | None:
        """The tombstone that withdraws version of ark (it or a later one), if any; versions
        is every version of ark (withdrawal.py)."""
        for v in covering(versions, version):
            found = withdrawal_in(self.archive(ark, v.version).erc, v.version)
            if found is not None:
                return found
        return None

    def list_archives(self, prefix: str = "") -> list[str]:
        """The bound ARKs (normalized) that start with prefix, sorted."""
        return self.store.list_bindings(prefix)

    # --- files ------------------------------------------------------------------------------

    def file(self, file_hash: bytes) -> FileRecord:
        """The stored reconstruction of a file (the empty file needs none); NotFound if none."""
        if file_hash == ZERO_HASH:
            return EMPTY_FILE
        try:
            return self.store.get_file(file_hash)
        except NotFound:
            raise NotFound(
                f"no file {hash_to_string(file_hash)} {self.place}; "
                "upload the shard that registers it"
            ) from None

    def has_file(self, file_hash: bytes, size: int) -> bool:
        """Is the file stored (or the empty file), with that size?"""
        try:
            return self.file(file_hash).size == size
        except NotFound:
            return False

    def bound_file(self, file_hash: bytes) -> FileRecord:
        """The reconstruction of a file a binding names, checked against the xorb footers and
        the file hash (the trust chain above the chunks); StoreCorrupt if lost or damaged."""
        try:
            record = self.file(file_hash)
        except NotFound as exc:
            raise StoreCorrupt(f"{exc}, yet a binding names it; run `arkfs store check`") from None
        check_file(self.store, record)
        return record

    def reconstruction(
        self,
        record: FileRecord,
        start: int,
        end: int,
        url_for: Callable[[bytes], str],
        with_footers: bool = False,
    ) -> Reconstruction:
        """Get File Reconstruction for bytes [start, end) of a file: the terms that overlap
        them, trimmed to whole chunks, and their fetch ranges (merged per xorb); with_footers,
        the footers of those xorbs too (the arkfs extension, reconstruction.py).

        [start, end) must be the whole file (0, size) or hold one of its bytes (clip_range).
        url_for names where a xorb's bytes can be fetched (a signed URL, or any key).
        """
        what = f"file {hash_to_string(record.file_hash)}"
        if record.size == 0 and (start, end) == (0, 0):  # the whole of the empty file
            return Reconstruction((), 0, {})
        start, end = clip_range(record.size, start, end, what)
        footers: dict[bytes, XorbFooter] = {}

        def chunk_sizes(h: bytes) -> list[int]:
            if h not in footers:
                footers[h] = self._footer(h, what)
            return footers[h].chunk_sizes()

        try:
            terms, offset = plan_range(record.terms, chunk_sizes, start, end)
        except (XetError, IndexError) as exc:
            raise StoreCorrupt(
                f"{what}: its stored terms disagree with its xorbs ({exc}); run `arkfs store check`"
            ) from None
        spans: dict[bytes, list[tuple[int, int]]] = {}
        for t in terms:
            spans.setdefault(t.xorb_hash, []).append((t.start, t.end))
        fetch: dict[bytes, tuple[FetchRange, ...]] = {}
        for xh, chunk_spans in spans.items():
            url = url_for(xh)
            ranges: list[FetchRange] = []
            for cs, ce in _merge_spans(chunk_spans):
                lo, hi = footers[xh].packed_range(cs, ce)
                ranges.append(FetchRange(url, cs, ce, lo, hi - 1))
            fetch[xh] = tuple(ranges)
        sent = {xh: footer_record(footers[xh]) for xh in spans} if with_footers else {}
        return Reconstruction(tuple(terms), offset, fetch, sent)

    def _footer(self, xorb_hash: bytes, what: str) -> XorbFooter:
        """The footer of a xorb that what (a file or dedup entry) names: missing is damage."""
        try:
            return self.store.xorb_footer(xorb_hash)
        except NotFound:
            raise StoreCorrupt(
                f"{what}: xorb {hash_to_string(xorb_hash)} is missing {self.place}; "
                "run `arkfs store check`"
            ) from None

    # --- intake -----------------------------------------------------------------------------

    def put_xorb(self, xorb_hash: bytes, data: bytes) -> bool:
        """Upload Xorb: store a xorb (either form) once its format and hash check; False if it
        was already there. Rejected if invalid or over MAX_XORB_ACCEPTED bytes."""
        name = hash_to_string(xorb_hash)
        if len(data) > MAX_XORB_ACCEPTED:
            raise Rejected(
                f"xorb {name} of {len(data)} bytes exceeds the {MAX_XORB_ACCEPTED}-byte limit"
            )
        try:
            stored = stored_xorb(data, xorb_hash)
        except XetError as exc:
            raise Rejected(f"invalid xorb {name}: {exc}") from None
        return self.store.put_xorb(xorb_hash, stored)

    def put_shard(self, data: bytes, progress: Progress | None = None) -> bool:
        """Upload Shard: register the files and dedup chunks of a shard (upload form) once it
        agrees with the stored xorbs; False if it was already there. Rejected otherwise.
        progress is told how many of its files are checked, as the check goes."""
        if len(data) > MAX_SHARD_SIZE:
            raise Rejected(f"shard of {len(data)} bytes exceeds the {MAX_SHARD_SIZE}-byte limit")
        records, dedup = self._shard_records(data, progress)
        return self.store.put_shard(shard_hash(data), data, records, dedup)

    def _shard_records(
        self, body: bytes, progress: Progress | None = None
    ) -> tuple[list[FileRecord], list[DedupEntry]]:
        """The file records and dedup entries of a shard once shard_problem finds none; the
        store checks each record against the footers again."""
        try:
            shard = parse_shard(body)
        except XetError as exc:
            raise Rejected(f"invalid shard: {exc}") from None
        named = {t.xorb_hash for f in shard.files for t in f.terms}
        named |= {b.xorb_hash for b in shard.cas_blocks}
        footers: dict[bytes, XorbFooter] = {}
        for xh in named:
            try:
                footers[xh] = self.store.xorb_footer(xh)
            except NotFound:
                raise Rejected(
                    f"shard references xorb {hash_to_string(xh)}, which was not uploaded"
                ) from None
        stored = self.store.file_sizes([f.file_hash for f in shard.files])
        problem = shard_problem(self.store, shard, footers.__getitem__, stored, progress)
        if problem:
            raise Rejected(f"shard disagrees with its xorbs: {problem}")
        records: list[FileRecord] = []
        dedup: list[DedupEntry] = []
        for block in shard.files:
            records.append(file_record(block))
            if block.terms:  # Eligibility Criteria: the first chunk of every file
                first = block.terms[0]
                ch = footers[first.xorb_hash].chunk_hashes[first.start]
                dedup.append(DedupEntry(ch, first.xorb_hash, first.start))
        for cas in shard.cas_blocks:
            dedup += (
                DedupEntry(c.chunk_hash, cas.xorb_hash, i)
                for i, c in enumerate(cas.chunks)
                if c.global_dedup_eligible
            )
        return records, dedup

    # --- global deduplication ---------------------------------------------------------------

    def dedup_shard(self, chunk_hash: bytes, now: int | None = None) -> Shard | None:
        """Query Chunk Deduplication: a shard of every xorb holding a global-dedup chunk, its
        chunk hashes keyed (Keyed Hash Security); None if the chunk is not tracked."""
        what = f"dedup entry of chunk {hash_to_string(chunk_hash)}"
        xorbs = dict.fromkeys(loc.xorb_hash for loc in self.store.dedup_lookup(chunk_hash))
        blocks: list[CasBlock] = [
            cas_block(self._footer(xh, what), self.store.xorb_size(xh), lambda h: h == chunk_hash)
            for xh in xorbs
        ]
        if not blocks:
            return None
        now = int(time.time()) if now is None else now
        return keyed_dedup_shard(
            blocks, self._dedup_key(now), creation_timestamp=now, key_expiry=now + DEDUP_KEY_TTL
        )

    def _dedup_key(self, now: int) -> bytes:
        """The key of dedup replies at time now: keyed by the secret, new every DEDUP_KEY_TTL s."""
        period = (now // DEDUP_KEY_TTL).to_bytes(8, "little")
        return blake3.blake3(period, key=self._dedup_secret).digest()


def _bound_erc(ark: str, erc: str, message: str) -> tuple[Erc, str]:
    """The ERC record a bind of ark with message stores, parsed and as ANVL text: erc
    without withdrawal elements unless the bind is a tombstone (publishing again
    reinstates); Rejected if it does not parse."""
    try:
        record = Erc.from_anvl(erc)
    except ArkError as exc:
        raise Rejected(f"bind {ark}: ERC record: {exc}") from None
    if not message.startswith(TOMBSTONE_MESSAGE):
        record = without_withdrawal(record)
        erc = record.to_anvl()
    return record, erc


def shard_hash(data: bytes) -> bytes:
    """The name a shard is registered under: the BLAKE3 hash of its bytes as uploaded."""
    return blake3.blake3(data).digest()


def _batched(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of up to size items, in order (itertools.batched once Python 3.12 is the floor)."""
    it = iter(items)
    while batch := list(itertools.islice(it, size)):
        yield batch
