"""The publish session: hash every file, place each chunk, upload xorbs and shards, bind.

Work is split by cost. A worker thread reads, chunks and hashes one file at a time and hands
chunks to the trio thread a block (HASH_BLOCK) at a time. The trio thread places each chunk:
at a known location (ChunkIndex, with the fragmentation rule) or into the xorb being built.
A full xorb is serialized (compressed) in another worker thread and uploaded while the next
one is built. Memory stays bounded whatever the size of the new data: at most UPLOAD_SLOTS
xorbs are in flight, their chunks are dropped once serialized, and only a stored xorb's
footer and size are kept for the shards. Shards go up once every xorb they name is stored
(Upload Flow), then the next version of the ARK is bound.

With an UploadJournal, each acknowledged xorb is recorded as it is, and a rerun after an
interruption starts from the chunks of the xorbs recorded, so it uploads only the rest.

A file whose hash is a file of the previous version is stored already: it needs no shard
entry, and with a TreeIndex that still knows its stat it is not even read. A publish whose
manifest and ERC equal the previous version's binds nothing (unless allow_empty); when the
TreeIndex remembers the tree's scan digest as the previous version, unchanged_scan says so
before an entry is made or a file looked up.
"""

import io
import os
import struct
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from itertools import islice

import trio

from arkfs.archive.manifest import Entry, Hashes, Kind, Manifest, build
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.ark.errors import ManifestError
from arkfs.backend.base import Backend
from arkfs.publish.dedup import (
    ChunkIndex,
    Fragmentation,
    Location,
    XorbRef,
    extends,
    long_enough,
)
from arkfs.publish.index import Known, StatKey, TreeIndex, Version, now_ns
from arkfs.publish.journal import UploadJournal
from arkfs.publish.progress import Progress
from arkfs.publish.scan import Found, Scanned
from arkfs.util.allocator import release_freed
from arkfs.xet.digest import Chunk, FileDigest, FileHasher, cut_blocks
from arkfs.xet.hashing import is_global_dedup_eligible, verification_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import CasBlock, FileBlock, Shard, cas_block, serialize_upload
from arkfs.xet.xorb import XorbBuilder, XorbFooter, parse_footer, serialize_xorb
from arkfs.xet.xorb_cuts import cuts_before

UPLOAD_SLOTS = 2  # xorbs serialized or uploading while the next one is built
HASH_BLOCK = 2 << 20  # bytes of a large file read and cut at a time
MAX_SHARD_BYTES = 48 * 1024 * 1024  # under the server's 64 MiB limit
# The server reads every file of a shard back to check its SHA-256 before it answers: a
# shard of 100,000 small files outlasts the client's read timeout, and its retries.
MAX_SHARD_FILES = 4096
# New xorbs' chunks registered per shard (48 bytes each, ~3 MiB): CasBlocks are made a
# shard at a time, not for every chunk of the session at once (1,000,000 at 1M files).
MAX_SHARD_CHUNKS = 1 << 16
QUERY_SPACING = 256  # chunks of one file between its global dedup queries (about 16 MiB)
QUERIES_AT_ONCE = 8  # global dedup queries in flight for a batch of small files
MISSES_IN_A_ROW = 32  # global dedup misses after which queries are spaced session-wide
STABLE_TRIES = 3  # reads of a file that changes while it is read, before giving up
SMALL_FILE = 4 << 20  # files up to this size are hashed in batches, one thread call each
BATCH_BYTES = 16 << 20
BATCH_FILES = 512
CHECK_BYTES = 1024  # bytes hashed in about the time the scan's check takes for an entry


class PublishError(Exception):
    """A publish that could not complete; nothing was bound."""


@dataclass(slots=True)
class Placed:
    """One chunk of a file and where its bytes live."""

    ref: XorbRef
    index: int
    hash: bytes
    size: int


# A new file's shard entry until the shards go up, one bytes object (~110 bytes for a
# one-chunk file) instead of a Placed per chunk: a flag (has a SHA-256), the SHA-256 slot,
# then a _TERM row per term; its xorb is a number (Publisher._refs), as its hash may not be
# known yet.
_NEW_FILE = struct.Struct("<?32s")
_TERM = struct.Struct("<IIII32s")  # xorb number, start, end, bytes, verification hash


@dataclass
class Summary:
    """What a publish did, for the closing lines."""

    ark: str
    files: int
    bytes: int
    new_bytes: int
    dedup_bytes: int
    uploaded_bytes: int
    xorbs: int
    shards: int
    version: int  # the version this publish bound (the one compared, if unchanged)
    follows: int | None  # the version it follows; None for v1
    skipped: list[str] = field(default_factory=list)
    changed: bool = True  # False: nothing changed since `version`, nothing was bound
    read_bytes: int = 0  # bytes read from the tree (files the index knew are not read)


class Publisher:
    """One publish session against a backend."""

    def __init__(
        self,
        backend: Backend,
        progress: Progress | None = None,
        journal: UploadJournal | None = None,
        tree_index: TreeIndex | None = None,
    ) -> None:
        self.backend = backend
        self.progress = progress or Progress()
        self.journal = journal
        self.tree_index = tree_index or TreeIndex(None)
        self._previous: Archive | None = None
        self._prior: set[bytes] = set()  # file hashes of the previous version
        self._prior_at: dict[str, tuple[bytes | None, bytes | None]] = {}  # path -> hashes
        self._known: Hashes = {}  # files not read, the index knows: path -> their hashes
        self._seeded_files: set[bytes] = set()
        self._seen_xorbs: set[bytes] = set()
        self._misses = 0  # global dedup queries in a row that found nothing
        self._since_query = QUERY_SPACING  # chunks looked at since the last query
        self.index = ChunkIndex()
        self._builder = XorbBuilder()
        self._ref = XorbRef()
        self._slots = trio.Semaphore(UPLOAD_SLOTS)
        # New xorbs: footer (packed: ~40 bytes a chunk, not a hash and two ints as objects),
        # serialized size, and the indices of its chunks that begin a file (global-dedup
        # eligible), packed as u32: 4 bytes a chunk, where a set of hashes took ~100.
        self._built: list[tuple[bytes, int, bytes]] = []
        self._firsts: list[int] = []  # of the xorb being built
        self._hash_limiter = trio.CapacityLimiter(1)
        self._unacked = {id(self._ref)}  # new xorbs (XorbRef ids) the CAS has not accepted yet
        # Placed files' xorbs, in order, each with its file hash if its shard entry is new.
        self._waiting: deque[tuple[tuple[XorbRef, ...], bytes | None]] = deque()
        # New files' shard entries (file hash -> _NEW_FILE record: one per content) until
        # sent, and the hashes of those whose every xorb is stored, in order: they go up
        # MAX_SHARD_FILES at a time while hashing goes on, so 1,000,000 records (~143 MB)
        # are never held at once, and the server checks them while the client hashes.
        self._new_files: dict[bytes, bytes] = {}
        self._ready: deque[bytes] = deque()
        self._sending = False  # a group of ready files is being sent
        self._shards = 0  # shards sent
        self._refs: list[XorbRef] = []  # the xorbs _NEW_FILE records name, by number
        self._ref_numbers: dict[int, int] = {}  # id(XorbRef) -> its number in _refs
        self.manifest: Manifest | None = None  # the manifest bound, once it is

    async def publish(
        self,
        ark: str,
        found: list[Found],
        erc: Erc,
        *,
        previous: Archive | None,
        message: str = "",
        skipped: list[str] | None = None,
        root: Entry | None = None,
        allow_empty: bool = False,
        check: Callable[[Iterable[Entry]], None] | None = None,
        scan: bytes | None = None,
        dropped: set[str] | None = None,
    ) -> Summary:
        """Upload the files of found, bind the next version of ark to their manifest, erc and
        message, and say what it did. previous is the latest version (None if unbound): its
        chunks are known to be stored already. root is the tree's root directory (mode,
        mtime, attributes). If manifest and erc equal previous's, nothing is bound unless
        allow_empty. found is consumed: emptied, and each file's Found dropped once it is
        read (~330 bytes a file: 330 MB at 1,000,000). check (the scan's check_publishable,
        given the entries) runs before the first file is read, so a tree the manifest would
        refuse is refused before any hashing, unless _check_first says the files to read
        cost less than the check: then (as when no file is to be read) it runs, on the
        entries made, only if building the manifest, which checks the same, fails (it cost
        0.9 s of an unchanged republish of 100,000 files). scan, the tree's
        Scanned.digest, is remembered in the tree index with the version bound (or found
        equal), for unchanged_scan to tell the next publish of the same tree. With dropped
        (scan.Changes), found holds only the entries that changed since previous: previous's
        entries at every other path are carried as they are, none made or looked up."""
        self.progress.total = sum(f.entry.size for f in found if f.entry.kind is Kind.FILE)
        self.progress.files = sum(1 for f in found if f.entry.kind is Kind.FILE)
        self.progress.begin("hash")
        self._previous = previous
        onto = None
        if dropped is not None:
            assert previous is not None, "changes are told against the previous version"
            onto = (previous.manifest.entries, self._carry(previous, dropped))
        if self.journal is not None:
            for footer, size in self.journal.load():  # acknowledged before an interruption
                self.index.add_footer(footer)
                self._built.append((footer.pack(), size, b""))
        summary = Summary(
            ark, self.progress.files, self.progress.total, 0, 0, 0, 0, 0, 0, None, skipped or []
        )
        if previous is not None:
            columns = previous.manifest.entries  # read without making an Entry per file
            if dropped is None:
                self._prior_at = {
                    columns.path(i): (xet, sha) for i, xet, _, sha in columns.file_hashes()
                }
            else:  # only the files found are looked up
                at = (columns.position(f.entry.path) for f in found)
                self._prior_at = {columns.path(i): columns.hashes(i) for i in at if i is not None}
            self._prior = columns.file_hash_set()
        entries: list[Entry] = []
        linked: dict[str, FileDigest] = {}  # the first of each hard-link group: its digest
        entries += [f.entry for f in found if f.entry.kind is not Kind.FILE]
        files = [f for f in found if f.entry.kind is Kind.FILE]
        # The other names of a hard-linked file are its first's content: read it once.
        copies = [f for f in files if f.entry.link not in (None, f.entry.path)]
        files = [f for f in files if f.entry.link in (None, f.entry.path)]
        files = self._unknown(files, entries, linked)
        if files and check is not None and _check_first(files, found, previous):
            check(f.entry for f in found)
        found.clear()
        unread = deque(files)
        del files
        async with trio.open_nursery() as uploads:
            for batch in _batches(unread):
                if len(batch) == 1 and batch[0].entry.size > SMALL_FILE:
                    await self._seed(batch[0].entry.path)
                    entry, digest, placed = await self._place_file(batch[0], uploads)
                    self._hashed(entry, digest, placed, entries, linked)
                    self._send_ready(uploads)
                    continue
                digests = await trio.to_thread.run_sync(
                    _digest_small, [f.source for f in batch], limiter=self._hash_limiter
                )
                await self._ask_ahead(
                    [
                        chunks
                        for chunks, digest, _, _ in digests
                        if digest.file_hash not in self._prior
                    ]
                )
                for f, (chunks, digest, key, began) in zip(batch, digests, strict=True):
                    entry = self._read(f, digest, key, began)
                    self.progress.hashed += digest.size
                    if digest.file_hash in self._prior:  # stored already, as a whole file
                        self._hashed(entry, digest, None, entries, linked)
                        self.progress.deduplicated += digest.size
                        continue
                    await self._seed(f.entry.path)
                    placer = _FilePlacer(self)
                    for chunk in chunks:
                        await placer.add(chunk, uploads)
                    await placer.finish(uploads)
                    self._hashed(entry, digest, placer.placed, entries, linked)
                self._send_ready(uploads)
            self.progress.begin("upload")
            if len(self._builder):
                await self._seal(uploads)
        self.index = ChunkIndex()  # every chunk is placed: free its locations before the bind
        for f in copies:
            assert f.entry.link is not None
            digest = linked[f.entry.link]
            entries.append(_file_entry(f.entry, digest))
            self.progress.hashed += digest.size  # its first's bytes: stored once
            self.progress.deduplicated += digest.size
            self.progress.files_stored += 1
        self.tree_index.save()  # its rows go before the manifest's columns are made
        release_freed()  # and the xorbs' chunks, freed by now, leave the arenas
        try:
            self.manifest = build(
                ark, entries, time.time(), root=root, hashes=self._known, onto=onto
            )
        except ManifestError as exc:
            if check is not None:  # the scan's message, for what the scan finds
                check(entries)
            if onto is not None:  # the remembered scan does not describe previous
                self.tree_index.forget_rows()
                raise PublishError(
                    f"the changes since the scan remembered cannot be merged ({exc}); "
                    "run the same command again: it compares every file"
                ) from None
            raise PublishError(f"the manifest cannot be built: {exc}") from None
        entries.clear()  # the manifest's columns hold them now
        self._known.clear()
        summary = replace(summary, files=self.manifest.file_count)  # hard links included
        nothing_new = previous is not None and not allow_empty and not self._built
        if nothing_new and previous is not None and unchanged(previous, self.manifest, erc):
            return self._unchanged(previous, summary, scan)
        self.progress.begin("bind")
        shards = await self._upload_shards()
        bound = await self.backend.bind(self.manifest, erc, message)
        if self.journal is not None:
            self.journal.remove()
        self.tree_index.remember(scan, Version.of(bound))
        self.progress.bound(bound.version)
        summary = replace(summary, shards=shards, version=bound.version, follows=bound.follows)
        return self._counted(summary)

    def _carry(self, previous: Archive, dropped: set[str]) -> list[int]:
        """The positions of previous's entries at dropped; every other file is counted as
        known and stored, and its tree index row carried."""
        columns = previous.manifest.entries
        drop = [i for i in map(columns.position, dropped) if i is not None]
        files = [i for i in drop if columns.kind(i) is Kind.FILE]
        size = previous.manifest.total_size - sum(columns.stat(i)[1] for i in files)
        count = previous.manifest.file_count - len(files)
        self.tree_index.carry(dropped)
        p = self.progress
        p.total, p.files = p.total + size, p.files + count
        p.hashed, p.known, p.deduplicated = p.hashed + size, p.known + size, p.deduplicated + size
        p.files_stored += count
        return drop

    def _unchanged(self, previous: Archive, summary: Summary, scan: bytes | None) -> Summary:
        """Nothing changed since previous: bind nothing, and remember the scan as previous."""
        _nothing_changed(previous.version, scan, self.tree_index, self.journal, self.progress)
        v = previous.version
        summary = replace(summary, version=v.version, follows=v.follows, changed=False)
        return self._counted(summary)

    def _counted(self, summary: Summary) -> Summary:
        """summary with the byte counts and xorbs of progress as they are at the end."""
        return replace(_counted(summary, self.progress), xorbs=len(self._built))

    def _unknown(
        self, files: list[Found], entries: list[Entry], linked: dict[str, FileDigest]
    ) -> list[Found]:
        """The files to read: all but those of the previous version that the tree index
        knows unchanged. Those are not read: their hashes are taken from the index, kept
        beside their scanned entries for build (no second Entry per file: most files of a
        republish, one pass, counted once at its end). The index is trusted only where it
        agrees with the previous version at the same path (XET hash and SHA-256), so it
        never names a file the CAS may not hold, nor another path's; with no previous
        version (a first publish of this ARK) the index is not even loaded (a stale index
        of 1,000,000 files is ~300 MB)."""
        index, prior, unknown, size = self.tree_index, self._prior_at, [], 0
        if not prior:
            return files
        hashes = self._known
        for f in files:
            e, key = f.entry, f.key
            known = index.lookup(e.path, key)
            xet, sha = prior.get(e.path, (None, None))
            if known is None or key is None or xet != known.xet_hash:
                unknown.append(f)
                continue
            if sha is not None and sha != known.sha256:  # moved, or gone wrong
                unknown.append(f)
                continue
            index.keep(e.path)
            if e.size == key.size:  # as scanned: kept, its hashes beside it (build)
                entries.append(e)
                hashes[e.path] = (known.xet_hash, known.sha256)
            else:
                entries.append(_hashed_entry(e, key.size, known.xet_hash, known.sha256))
            if e.link is not None:
                linked[e.path] = FileDigest(known.xet_hash, known.sha256, key.size, ())
            size += key.size
        self.progress.hashed += size
        self.progress.known += size
        self.progress.deduplicated += size
        self.progress.files_stored += len(files) - len(unknown)  # none waits: nothing read yet
        return unknown

    def _hashed(
        self,
        entry: Entry,
        digest: FileDigest,
        placed: list[Placed] | None,
        entries: list[Entry],
        linked: dict[str, FileDigest],
    ) -> None:
        """A file is hashed and its chunks placed (placed None: stored already, as a whole):
        keep its manifest entry and, if new, its shard entry; its chunks are dropped."""
        entries.append(_file_entry(entry, digest))
        if entry.link is not None:
            linked[entry.path] = digest
        if placed is None:
            self._placed([])
            return
        new = None
        if digest.file_hash not in self._prior and digest.file_hash not in self._new_files:
            new = digest.file_hash
            self._new_files[new] = self._new_file(digest, placed)
        self._placed(list({id(p.ref): p.ref for p in placed}.values()), new)

    def _new_file(self, digest: FileDigest, placed: list[Placed]) -> bytes:
        """The shard entry of a file placed: its terms (runs of consecutive chunks of one
        xorb) and their verification hashes, the xorbs named by number."""
        if [p.hash for p in placed] != [h for h, _ in digest.chunks]:
            raise PublishError("internal error: placed chunks differ from the file's chunks")
        terms: list[list[int]] = []  # xorb number, start, end, bytes
        hashes: list[list[bytes]] = []
        for p in placed:
            ref = self._ref_numbers.get(id(p.ref))
            if ref is None:
                ref = self._ref_numbers[id(p.ref)] = len(self._refs)
                self._refs.append(p.ref)
            last = terms[-1] if terms else None
            if last is not None and last[0] == ref and last[2] == p.index:
                last[2] += 1
                last[3] += p.size
                hashes[-1].append(p.hash)
            else:
                terms.append([ref, p.index, p.index + 1, p.size])
                hashes.append([p.hash])
        sha = digest.sha256
        rows = (_TERM.pack(*t, verification_hash(hs)) for t, hs in zip(terms, hashes, strict=True))
        return b"".join([_NEW_FILE.pack(sha is not None, sha or bytes(32)), *rows])

    def _file_block(self, file_hash: bytes, record: bytes) -> FileBlock:
        """The FileBlock of a new file from its _NEW_FILE record, once every xorb it names
        is built."""
        has_sha, sha = _NEW_FILE.unpack_from(record)
        terms, verification = [], []
        for ref, start, end, length, check in _TERM.iter_unpack(record[_NEW_FILE.size :]):
            xorb = self._refs[ref].hash
            assert xorb is not None, "every xorb is built before shards are made"
            terms.append(Term(xorb, start, end, length))
            verification.append(check)
        return FileBlock(file_hash, tuple(terms), tuple(verification), sha if has_sha else None)

    def _read(self, f: Found, digest: FileDigest, key: StatKey, began: int) -> Entry:
        """Count and index a file just read (stat key as read); its entry, with the mtime
        of what was read."""
        self.progress.read += digest.size
        if digest.sha256 is not None:
            known = Known(digest.file_hash, digest.sha256)
            self.tree_index.record(f.entry.path, key, known, began)
        if f.entry.mtime_ns == key.mtime_ns:  # the scan's entry, not a copy per file
            return f.entry
        return replace(f.entry, mtime_ns=key.mtime_ns)

    async def _seed(self, path: str) -> None:
        """Learn the chunks of the previous version's file at path (Cached Metadata
        Deduplication), whatever its size, before placing the file now there. Every file of
        the previous version seeds so when it is read again; a file the tree index knows is
        not read, and needs none; a file moved elsewhere is found through global dedup."""
        if self._previous is None:
            return
        same = self._previous.manifest.entry(path)
        if same is not None and same.kind is Kind.FILE:
            await self._seed_file(same)

    async def _seed_file(self, entry: Entry) -> None:
        """Learn the chunks of every xorb one file of the previous version uses."""
        if entry.xet_hash is None or entry.size == 0 or entry.xet_hash in self._seeded_files:
            return
        self._seeded_files.add(entry.xet_hash)
        rec = await self.backend.reconstruction(entry.xet_hash, 0, entry.size)
        for term in rec.terms:
            if term.xorb_hash not in self._seen_xorbs:
                self._seen_xorbs.add(term.xorb_hash)
                footer = await self.backend.footer(term.xorb_hash, rec.fetch_for(term))
                self.index.add_footer(footer)

    async def _place_file(
        self, f: Found, uploads: trio.Nursery
    ) -> tuple[Entry, FileDigest, list[Placed]]:
        """Hash one file in a worker thread while placing its chunks here; a file that
        changed while it was read (its stat before and after differ) is read and placed
        again, from a new placer (what the torn read added is never referenced)."""
        for _ in range(STABLE_TRIES):
            send, receive = trio.open_memory_channel[list[Chunk]](1)
            result: list[tuple[FileDigest, StatKey, StatKey, int]] = []

            def hash_file(
                send: trio.MemorySendChannel[list[Chunk]] = send,
                result: list[tuple[FileDigest, StatKey, StatKey, int]] = result,
            ) -> None:
                hasher = FileHasher()
                began = now_ns()
                with open_source(f.source) as file:
                    before = StatKey.of(os.fstat(file.fileno()))
                    for block, pieces in cut_blocks(file, HASH_BLOCK):
                        if not block:
                            last, digest = hasher.finish(pieces)
                            trio.from_thread.run(send.send, last)
                            after = StatKey.of(os.fstat(file.fileno()))
                            result.append((digest, before, after, began))
                            return
                        trio.from_thread.run(send.send, hasher.add(block, pieces))

            placer = _FilePlacer(self)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._run_hasher, hash_file, f.source, send)
                async with receive:
                    async for chunks in receive:
                        for chunk in chunks:
                            await placer.add(chunk, uploads)
                        self.progress.hashed += sum(c.size for c in chunks)
            await placer.finish(uploads)
            digest, before, after, began = result[0]
            if before == after:
                return self._read(f, digest, after, began), digest, placer.placed
            self.progress.hashed -= digest.size
        raise PublishError(_unstable(f.source))

    async def _run_hasher(
        self, fn: Callable[[], None], path: str, send: trio.MemorySendChannel[list[Chunk]]
    ) -> None:
        try:
            async with send:
                await trio.to_thread.run_sync(fn, limiter=self._hash_limiter)
        except OSError as exc:
            raise PublishError(f"cannot read {path}: {exc.strerror or exc}") from None

    def _should_ask(self, chunk_hash: bytes, at: int, next_query: int) -> bool:
        """Should global dedup be asked about a chunk not known locally, the at-th of its
        file, whose file may ask again from its chunk next_query on? (Counts the chunk.)

        The rule of xet-core's FileDeduper (deduplication/src/file_deduplication.rs,
        process_chunks): a chunk is asked about if it is eligible (the first of its file,
        or its hash matches the global dedup pattern) and its index within the file has
        reached the file's next query index; a query, hit or miss, moves that index
        QUERY_SPACING chunks on (min_spacing_between_global_dedup_queries, 256). The
        spacing is per file, so whether a file is asked about does not depend on the files
        around it. hf_xet sends these queries in the background; here each costs a round
        trip, so after MISSES_IN_A_ROW queries in a row found nothing (all-new data, such
        as a first publish of 100,000 small files: 10x slower otherwise), at most one query
        goes per QUERY_SPACING chunks of the session until one finds something.
        """
        self._since_query += 1
        if at < next_query or not is_global_dedup_eligible(chunk_hash, at == 0):
            return False
        if self._misses >= MISSES_IN_A_ROW and self._since_query < QUERY_SPACING:
            return False
        self._since_query = 0
        return True

    def _answered(self, found: bool) -> None:
        """Count a global dedup answer: a hit ends a run of misses."""
        self._misses = 0 if found else self._misses + 1

    async def _ask_ahead(self, files: list[list[Chunk]]) -> None:
        """Ask global dedup about a batch of small files at once, up to QUERIES_AT_ONCE
        queries in flight, as hf_xet does in the background (register_global_dedup_query,
        then complete_global_dedup_queries): the chunks locate would ask about, one file
        after another (_should_ask). locate then finds the answers."""
        asked: list[bytes] = []
        for chunks in files:
            next_query = 0
            for at, chunk in enumerate(chunks):
                if self.index.find(chunk.hash, None) is not None:
                    continue
                if not self._should_ask(chunk.hash, at, next_query):
                    continue
                next_query = at + QUERY_SPACING
                if chunk.hash not in self.index.queried:
                    self.index.queried.add(chunk.hash)
                    asked.append(chunk.hash)
        limiter = trio.CapacityLimiter(QUERIES_AT_ONCE)

        async def ask(chunk_hash: bytes) -> None:
            async with limiter:
                shard = await self.backend.query_dedup(chunk_hash)
            if shard is not None:
                self.index.add_shard(shard)
            self._answered(shard is not None)

        async with trio.open_nursery() as nursery:
            for chunk_hash in asked:
                nursery.start_soon(ask, chunk_hash)

    async def locate(
        self, chunk: Chunk, at: int, after: Location | None, placer: "_FilePlacer"
    ) -> Location | None:
        """Where chunk (the at-th of its file) already is, asking global dedup when
        _should_ask says so."""
        loc = self.index.find(chunk.hash, after)
        if loc is not None:
            return loc
        if self._should_ask(chunk.hash, at, placer.next_query):
            placer.next_query = at + QUERY_SPACING
            if chunk.hash not in self.index.queried:
                self.index.queried.add(chunk.hash)
                shard = await self.backend.query_dedup(chunk.hash)
                if shard is not None:
                    self.index.add_shard(shard)
                    loc = self.index.find(chunk.hash, after)
                self._answered(shard is not None)
        return loc

    async def add_new(self, chunk: Chunk, first: bool, uploads: trio.Nursery) -> Placed:
        """Put a chunk into the xorb being built."""
        builder = self._builder
        if not builder.fits(chunk.data) or cuts_before(chunk.hash, builder.chunk_bytes, first):
            await self._seal(uploads)
        index = self._builder.add(chunk.hash, chunk.data)
        if first:
            self._firsts.append(index)
        self.index.add(chunk.hash, (self._ref, index))
        self.progress.new += chunk.size
        return Placed(self._ref, index, chunk.hash, chunk.size)

    async def _seal(self, uploads: trio.Nursery) -> None:
        """Serialize and upload the xorb being built; wait while UPLOAD_SLOTS are in flight."""
        await self._slots.acquire()
        self.progress.begin("upload")
        ref, chunks, firsts = self._ref, self._builder.chunks, self._firsts
        self._builder, self._ref, self._firsts = XorbBuilder(), XorbRef(), []
        self._unacked.add(id(self._ref))
        uploads.start_soon(self._upload_xorb, ref, chunks, firsts)

    async def _upload_xorb(
        self, ref: XorbRef, chunks: list[tuple[bytes, bytes]], firsts: list[int]
    ) -> None:
        try:
            xorb = await trio.to_thread.run_sync(serialize_xorb, chunks)
            size = sum(len(data) for _, data in chunks)
            del chunks  # only the serialized copy waits for the upload
            ref.hash = xorb.hash
            await self.backend.upload_xorb(xorb.hash, xorb.data)
            if self.journal is not None:
                self.journal.record(xorb.footer, len(xorb.data))
            packed_firsts = struct.pack(f"<{len(firsts)}I", *firsts)
            self._built.append((xorb.footer.pack(), len(xorb.data), packed_firsts))
            self._unacked.discard(id(ref))
            self._placed(None)
            self.progress.stored += size
            self.progress.uploaded += len(xorb.data)
            self.progress.xorbs += 1
        finally:
            self._slots.release()

    def _placed(self, xorbs: list[XorbRef] | None, new: bytes | None = None) -> None:
        """A file's chunks are placed in xorbs (new: its hash, if its shard entry is new), or,
        with None, a xorb was stored: count the files, in order, whose every chunk is now in
        a stored xorb, and make the new ones ready to register."""
        if xorbs is not None:
            self._waiting.append((tuple(xorbs), new))
        while self._waiting and not any(id(r) in self._unacked for r in self._waiting[0][0]):
            _, stored = self._waiting.popleft()
            self.progress.files_stored += 1
            if stored is not None:
                self._ready.append(stored)

    def _send_ready(self, uploads: trio.Nursery) -> None:
        """Send the files ready to register, MAX_SHARD_FILES to a shard, in the background
        (one shard at a time; what is left goes with the bind's shards)."""
        if not self._sending and len(self._ready) >= MAX_SHARD_FILES:
            self._sending = True
            uploads.start_soon(self._send_files)

    async def _send_files(self) -> None:
        try:
            while len(self._ready) >= MAX_SHARD_FILES:
                group = [self._ready.popleft() for _ in range(MAX_SHARD_FILES)]
                files = tuple(self._file_block(h, self._new_files.pop(h)) for h in group)
                self._shards += await self._send(Shard(files=files))
        finally:
            self._sending = False

    async def _upload_shards(self) -> int:
        """Register the files not sent yet, then the new xorbs' chunks, in shards under the
        size limit; how many shards the publish sent. FileBlocks are made MAX_SHARD_FILES
        at a time and CasBlocks MAX_SHARD_CHUNKS at a time, as each shard is sent (for
        1,000,000 files the shards are some 200 MB together, their blocks several times
        that), so shard_bytes grows by each group's shards as they are made."""
        count = self._shards
        files: tuple[FileBlock, ...] = ()
        self._ready.clear()
        records = iter(self._new_files.items())  # not a list of pairs
        while group := list(islice(records, MAX_SHARD_FILES)):
            if files:
                count += await self._send(Shard(files=files))
            files = tuple(self._file_block(*n) for n in group)
        # The last group of files goes with the first group of chunks: a small publish
        # sends one shard.
        cas: list[CasBlock] = []
        chunks = 0
        for packed, size, firsts in self._built:
            footer = parse_footer(packed, size)
            if cas and chunks + footer.num_chunks > MAX_SHARD_CHUNKS:
                count += await self._send(Shard(files=files, cas_blocks=tuple(cas)))
                files, cas, chunks = (), [], 0
            cas.append(_cas_block(footer, size, firsts))
            chunks += footer.num_chunks
        if files or cas or not count:  # an empty shard when nothing is new, as before
            count += await self._send(Shard(files=files, cas_blocks=tuple(cas)))
        self._new_files.clear()
        return count

    async def _send(self, shard: Shard) -> int:
        """Upload shard, in parts under the limits (_split); how many."""
        parts = _split(shard)
        self.progress.shard_bytes += sum(size for _, size in parts)
        for part, _ in parts:
            data = serialize_upload(part)
            await self.backend.upload_shard(data)
            self.progress.shards_sent += len(data)
        return len(parts)


class _FilePlacer:
    """Places one file's chunks, holding back a run of known chunks until it is long
    enough to reference, or ends and Fragmentation decides (Fragmentation Prevention).

    A known chunk right after the previous chunk's place (the next index of the same
    xorb, or the same chunk repeated) extends a range instead of starting one, so it is
    referenced at once.
    """

    def __init__(self, session: Publisher) -> None:
        self.session = session
        self.placed: list[Placed] = []
        self.pending: list[tuple[Chunk, Location]] = []
        self.fragmentation = Fragmentation()
        self.chunks = 0  # chunks of the file seen so far
        self.next_query = 0  # the first chunk index that may be asked about (locate)

    async def add(self, chunk: Chunk, uploads: trio.Nursery) -> None:
        first = not self.placed and not self.pending
        after = self.pending[-1][1] if self.pending else self._last()
        loc = await self.session.locate(chunk, self.chunks, after, self)
        self.chunks += 1
        if loc is not None and not self.pending and after is not None and extends(after, loc):
            self._reference(chunk, loc)
            return
        if loc is not None and self.pending and extends(self.pending[-1][1], loc):
            self.pending.append((chunk, loc))
            if long_enough(len(self.pending), sum(c.size for c, _ in self.pending)):
                self._accept()
            return
        await self._end_run(uploads)
        if loc is None:
            self._place(await self.session.add_new(chunk, first, uploads))
        else:
            self.pending.append((chunk, loc))

    def _last(self) -> Location | None:
        return (self.placed[-1].ref, self.placed[-1].index) if self.placed else None

    def _place(self, p: Placed) -> None:
        last = self._last()
        self.fragmentation.placed(last is not None and extends(last, (p.ref, p.index)))
        self.placed.append(p)

    def _reference(self, chunk: Chunk, loc: Location) -> None:
        self._place(Placed(loc[0], loc[1], chunk.hash, chunk.size))
        self.session.progress.deduplicated += chunk.size

    def _accept(self) -> None:
        for c, at in self.pending:
            self._reference(c, at)
        self.pending.clear()

    async def _end_run(self, uploads: trio.Nursery) -> None:
        """The run of known chunks ended: reference it, or upload its chunks again."""
        if not self.pending:
            return
        if self.fragmentation.accept(len(self.pending), sum(c.size for c, _ in self.pending)):
            self._accept()
            return
        for c, _ in self.pending:
            self._place(await self.session.add_new(c, not self.placed, uploads))
        self.pending.clear()

    async def finish(self, uploads: trio.Nursery) -> None:
        """End of file: the last run is decided like any other."""
        await self._end_run(uploads)


def _cas_block(footer: XorbFooter, size: int, firsts: bytes) -> CasBlock:
    """CAS Info Section entry of a new xorb, flagging its global-dedup eligible chunks:
    those at the indices packed in firsts (chunks that begin a file), and the rest the
    hash rule admits."""
    hashes = footer.chunk_hashes
    first = {hashes[i] for (i,) in struct.iter_unpack("<I", firsts)}
    return cas_block(footer, size, lambda h: is_global_dedup_eligible(h, h in first))


def _check_first(files: list[Found], found: list[Found], previous: Archive | None) -> bool:
    """Should the scan's check run before files are read? Always for a first version;
    for a later one only if reading them costs more than the check, which makes an entry
    for each of found (about what hashing CHECK_BYTES does: 10 files changed in 100,000
    spent 18% of their republish in it)."""
    return previous is None or sum(f.entry.size for f in files) > CHECK_BYTES * len(found)


def _batches(files: deque[Found]) -> Iterator[list[Found]]:
    """Runs of small files of at most BATCH_BYTES and BATCH_FILES; a large file alone.
    Each file is taken off files as its batch is made, so none is kept once read."""
    batch: list[Found] = []
    size = 0
    while files:
        f = files.popleft()
        if f.entry.size > SMALL_FILE:
            if batch:
                yield batch
            yield [f]
            batch, size = [], 0
            continue
        if batch and (size + f.entry.size > BATCH_BYTES or len(batch) >= BATCH_FILES):
            yield batch
            batch, size = [], 0
        batch.append(f)
        size += f.entry.size
    if batch:
        yield batch


def _digest_small(paths: list[str]) -> list[tuple[list[Chunk], FileDigest, StatKey, int]]:
    """Chunks, digest, stat key and read start of each small file, read whole (in a worker
    thread); a file whose stat differs after the read from before it is read again."""
    out = []
    for path in paths:
        for _ in range(STABLE_TRIES):
            try:
                began = now_ns()
                with open_source(path) as f:
                    before = StatKey.of(os.fstat(f.fileno()))
                    data = f.read()
                    after = StatKey.of(os.fstat(f.fileno()))
            except OSError as exc:
                raise PublishError(f"cannot read {path}: {exc.strerror or exc}") from None
            if before == after:
                break
        else:
            raise PublishError(_unstable(path))
        hasher = FileHasher()
        chunks = hasher.update(data)
        last, digest = hasher.finish()
        out.append((chunks + last, digest, after, began))
    return out


def open_source(path: str) -> io.BufferedReader:
    """A file of the tree, opened to be hashed."""
    return open(path, "rb")


def _unstable(path: str) -> str:
    return (
        f"{path} changed while it was read, {STABLE_TRIES} times: publish it once nothing "
        "writes to it"
    )


def _file_entry(scanned: Entry, digest: FileDigest) -> Entry:
    """The manifest entry of a hashed file; its size is what was read, not what stat said."""
    return _hashed_entry(scanned, digest.size, digest.file_hash, digest.sha256)


def _hashed_entry(e: Entry, size: int, xet: bytes, sha: bytes | None) -> Entry:
    """e with its content's size and hashes (made directly: dataclasses.replace costs 10 µs
    a file)."""
    return Entry(e.path, e.kind, size, e.mode, e.mtime_ns, xet, sha, e.target, e.link, e.xattrs)


def _split(shard: Shard) -> list[tuple[Shard, int]]:
    """One shard, or several halves when it would exceed MAX_SHARD_FILES or MAX_SHARD_BYTES;
    each with its serialized size."""
    if len(shard.files) <= MAX_SHARD_FILES:
        size = len(serialize_upload(shard))
        if size <= MAX_SHARD_BYTES:
            return [(shard, size)]
    files, cas = shard.files, shard.cas_blocks
    if len(files) + len(cas) < 2:
        raise PublishError("a single file's reconstruction exceeds the shard size limit")
    if len(cas) > 1 or not files:
        half = len(cas) // 2
        return _split(Shard(files=files, cas_blocks=cas[:half])) + _split(
            Shard(cas_blocks=cas[half:])
        )
    half = len(files) // 2
    return _split(Shard(files=files[:half], cas_blocks=cas)) + _split(Shard(files=files[half:]))


async def publish_tree(
    backend: Backend,
    ark: str,
    found: list[Found],
    erc: Erc,
    *,
    previous: Archive | None,
    message: str = "",
    progress: Progress | None = None,
    skipped: list[str] | None = None,
    journal: UploadJournal | None = None,
    root: Entry | None = None,
    tree_index: TreeIndex | None = None,
    allow_empty: bool = False,
    check: Callable[[Iterable[Entry]], None] | None = None,
    scan: bytes | None = None,
    dropped: set[str] | None = None,
) -> tuple[Summary, Manifest]:
    """Publish scanned entries as the next version of ark (resuming from journal, if one is
    given); return the summary and the manifest of the version bound (the one sent, not
    fetched back: for 1,000,000 files that would be a second ~110 MB round trip)."""
    publisher = Publisher(backend, progress, journal, tree_index)
    summary = await publisher.publish(
        ark,
        found,
        erc,
        previous=previous,
        message=message,
        skipped=skipped,
        root=root,
        allow_empty=allow_empty,
        check=check,
        scan=scan,
        dropped=dropped,
    )
    assert publisher.manifest is not None
    return summary, publisher.manifest


def unchanged_scan(
    ark: str,
    scanned: Scanned,
    erc: Erc,
    *,
    latest: tuple[VersionInfo, Erc] | None,
    tree_index: TreeIndex,
    journal: UploadJournal | None,
    progress: Progress,
    allow_empty: bool = False,
) -> Summary | None:
    """The summary of a publish of scanned that finds nothing changed without making an
    entry, looking a file up or reading the latest version's manifest: the tree index
    remembers scanned's digest as latest (the latest version and its ERC, which erc is),
    and no interrupted publish left xorbs to bind. None otherwise: then publish_tree finds
    out."""
    if latest is None or scanned.digest is None or allow_empty:
        return None
    v, latest_erc = latest
    if tree_index.published(scanned.digest) != Version.of(v) or latest_erc != erc:
        return None
    if journal is not None and journal.load():
        return None
    progress.files, progress.total = scanned.files, scanned.total
    progress.hashed = progress.known = progress.deduplicated = scanned.total  # all known
    progress.files_stored = scanned.files
    _nothing_changed(v, scanned.digest, tree_index, journal, progress)
    summary = Summary(ark, scanned.files, scanned.total, 0, 0, 0, 0, 0, v.version, v.follows)
    return replace(_counted(summary, progress), skipped=scanned.skipped, changed=False)


def _nothing_changed(
    previous: VersionInfo,
    scan: bytes | None,
    tree_index: TreeIndex,
    journal: UploadJournal | None,
    progress: Progress,
) -> None:
    """Bind nothing: drop the journal, remember the scan as previous, say so in progress."""
    if journal is not None:
        journal.remove()
    tree_index.remember(scan, Version.of(previous))
    progress.bound(previous.version, unchanged=True)


def _counted(summary: Summary, p: Progress) -> Summary:
    """summary with the byte counts of progress as they are at the end."""
    return replace(
        summary,
        new_bytes=p.new,
        dedup_bytes=p.deduplicated,
        uploaded_bytes=p.uploaded,
        read_bytes=p.read,
    )


def unchanged(previous: Archive, manifest: Manifest, erc: Erc) -> bool:
    """Would binding manifest and erc repeat the previous version (entries, root, ERC)?"""
    old = previous.manifest
    return old.root == manifest.root and old.entries == manifest.entries and previous.erc == erc
