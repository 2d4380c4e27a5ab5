"""ScaledStore: xorbs and shards in an S3-compatible bucket, the index in PostgreSQL.

Layout in the bucket (PREFIX optional), every object named by the XET hash string of its
content:
    PREFIX/xorbs/<xorb hash>     stored xorbs (chunk region and footer)
    PREFIX/shards/<shard hash>   shards as registered

The one ordering that makes it crash-safe, as in the local store: what a row refers to is
in the bucket before the row commits. A xorb row (with the xorb's footer, so reconstructions
never touch the bucket) commits after its PUT; a shard, its files, terms and dedup chunks
commit in one transaction after the shard's PUT, and only for xorbs already indexed (foreign
keys say so too). A crash leaves at worst an object no row names, which a retry reuses.

Several servers may share one bucket and database. Objects are named by their hash, so
concurrent PUTs of one xorb write the same bytes to one key; rows are inserted with ON
CONFLICT DO NOTHING, so each is indexed once and exactly one writer is told it inserted.
bind takes a per-ARK advisory lock, so concurrent binders get distinct consecutive versions.
"""

import hashlib
import itertools
import struct
from collections.abc import Sequence

from arkfs.archive.record import VersionInfo
from arkfs.store.base import (
    UNINDEXED,
    Binding,
    ChunkLocation,
    DedupEntry,
    FileRecord,
    FooterCache,
    FooterOf,
    NewBinding,
    StoreStats,
    binding_problem,
    checked_footers,
    hash_name,
    no_file,
    no_version,
    records_problem,
    row_problems,
    sampled,
    stored_footer,
    version_problems,
)
from arkfs.store.bucket import Bucket
from arkfs.store.errors import NotFound, OutOfRange, Rejected, StoreCorrupt
from arkfs.store.gc import GcReport, kept_shards, kept_xorbs
from arkfs.store.identity import verify
from arkfs.store.postgres import COUNTERS, Cursor, Index
from arkfs.store.shards import stored_shard_problem
from arkfs.util.msgpack_file import whole
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string, string_to_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.trust import named_footer
from arkfs.xet.xorb import XorbFooter, stored_xorb

XORBS, SHARDS = "xorbs", "shards"
_U32 = struct.Struct("<I")

_INFO_COLUMNS = "version, created, message, follows, files, bytes"  # VersionInfo after ark
_BINDING_COLUMNS = "manifest, erc, created, version, message, follows, files, bytes"


def _footer_tail(stored: bytes) -> bytes:
    """The footer and its length field at the end of a stored xorb (CasObjectInfo)."""
    return stored[-(_U32.unpack(stored[-4:])[0] + 4) :]


def _hash_of(name: str) -> bytes | None:
    """The hash an object is named by, or None if the name is not a hash string."""
    try:
        h = string_to_hash(name)
    except XetError:
        return None
    return h if hash_to_string(h) == name else None


class ScaledStore:
    """A store in a bucket with a PostgreSQL index; safe to share between threads, processes
    and servers."""

    remote_reads = True  # each xorb read is an S3 GET: shard intake reads xorbs whole

    def __init__(self, bucket: Bucket, index: Index) -> None:
        """Use ScaledStore.open."""
        self.bucket, self.index = bucket, index
        self.place = f"the store {bucket.where()} indexed in {index.where}"
        self._footers = FooterCache()

    @classmethod
    def open(
        cls,
        location: str,
        endpoint: str | None,
        dsn: str,
        connections: int = 16,
        public_endpoint: str | None = None,
    ) -> "ScaledStore":
        """The store in bucket location (s3://BUCKET[/PREFIX]) at endpoint, indexed in the
        PostgreSQL database dsn; StoreError, saying which, unless both answer, and WrongStore
        unless they are one store initialised for this arkfs (identity.py). Pre-signed URLs
        name public_endpoint, where readers reach the bucket (default: endpoint)."""
        bucket = Bucket.open(location, endpoint, connections, public_endpoint)
        index = Index.connect(dsn, connections)
        try:
            verify(bucket, index)
        except BaseException:
            index.close()
            raise
        return cls(bucket, index)

    def close(self) -> None:
        """Close the index connections."""
        self.index.close()

    def __enter__(self) -> "ScaledStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Xorbs

    def _xorb_key(self, h: bytes) -> str:
        return self.bucket.key(XORBS, hash_name(h, "xorb"))

    def _xorb_row(self, h: bytes) -> tuple[int, bytes] | None:
        """(size, footer tail) of an indexed xorb, or None."""
        with self.index.transaction("look up a xorb") as cur:
            cur.execute("SELECT size, footer FROM xorbs WHERE hash = %s", (h,))
            row = cur.fetchone()
        return None if row is None else (int(row[0]), bytes(row[1]))

    def has_xorb(self, h: bytes) -> bool:
        """Is xorb h stored (indexed, hence in the bucket)?"""
        hash_name(h, "xorb")
        return self._xorb_row(h) is not None

    def put_xorb(self, h: bytes, stored: bytes) -> bool:
        """Store xorb h in its stored form; False if already indexed. Idempotent by hash: the
        PUT is skipped when an object of that size is already at its key."""
        key = self._xorb_key(h)
        if self._xorb_row(h) is not None:
            return False
        footer = stored_footer(h, stored)
        if self.bucket.size(key) != len(stored):
            self.bucket.put(key, stored)
        with self.index.transaction("index a xorb") as cur:
            cur.execute(
                "INSERT INTO xorbs (hash, size, footer) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                (h, len(stored), _footer_tail(stored)),
            )
            inserted = cur.rowcount == 1
        self._footers.put(h, footer)
        return inserted

    def _size(self, h: bytes) -> int:
        row = self._xorb_row(h)
        if row is None:
            raise NotFound(f"xorb {hash_name(h, 'xorb')} is not in {self.place}")
        return row[0]

    def xorb_size(self, h: bytes) -> int:
        """Size in bytes of stored xorb h."""
        return self._size(h)

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        """Bytes [start, end) of stored xorb h, from the bucket."""
        size = self._size(h)
        name = hash_to_string(h)
        if not 0 <= start <= end <= size:
            raise OutOfRange(f"bytes {start}..{end} are not within xorb {name} ({size} bytes)")
        if start == end:
            return b""
        try:
            data = self.bucket.get(self._xorb_key(h), start, end)
        except (NotFound, OutOfRange):
            raise StoreCorrupt(
                f"xorb {name} is indexed but missing or short in {self.bucket.where()}; "
                "run `arkfs store check`"
            ) from None
        if len(data) != end - start:
            raise StoreCorrupt(
                f"xorb {name}: the bucket sent {len(data)} bytes of {start}..{end}; "
                "run `arkfs store check`"
            )
        return data

    def read_xorb_file(self, h: bytes, start: int, end: int) -> tuple[bytes, None]:
        """read_xorb: a bucket's bytes lie in no local file."""
        return self.read_xorb(h, start, end), None

    def xorb_footer(self, h: bytes) -> XorbFooter:
        """The footer of stored xorb h, from the index, checked against its name."""
        footer = self._footers.get(h)
        if footer is not None:
            return footer
        row = self._xorb_row(h)
        if row is None:
            raise NotFound(f"xorb {hash_name(h, 'xorb')} is not in {self.place}")
        size, tail = row
        try:
            footer = named_footer(tail, size, h)
        except XetError as exc:
            raise StoreCorrupt(
                f"xorb {hash_to_string(h)}: its indexed footer is damaged: {exc}; "
                "run `arkfs store check`"
            ) from None
        self._footers.put(h, footer)
        return footer

    def xorb_url(self, h: bytes, ttl: int) -> str | None:
        """A pre-signed GET URL of xorb h in the bucket, valid for ttl seconds."""
        return self.bucket.presign(self._xorb_key(h), ttl)

    # Shards, files, dedup

    def _has_shard(self, shard_hash: bytes) -> bool:
        with self.index.transaction("look up a shard") as cur:
            cur.execute("SELECT 1 FROM shards WHERE hash = %s", (shard_hash,))
            return cur.fetchone() is not None

    def put_shard(
        self,
        shard_hash: bytes,
        data: bytes,
        files: Sequence[FileRecord],
        dedup: Sequence[DedupEntry],
    ) -> bool:
        """Store a shard with the files and dedup chunks it registers; False if already there.

        Every record must agree with the footers of indexed xorbs (Rejected otherwise, and
        nothing is stored). The shard object is in the bucket before its rows commit, in one
        transaction.
        """
        name = hash_name(shard_hash, "shard")
        if self._has_shard(shard_hash):
            return False
        problem = records_problem(files, dedup, self.xorb_footer)
        if problem:
            raise Rejected(f"shard {name} not stored: {problem}")
        key = self.bucket.key(SHARDS, name)
        if self.bucket.size(key) != len(data):
            self.bucket.put(key, data)
        with self.index.transaction("register a shard") as cur:
            cur.execute(
                "INSERT INTO shards (hash, size, sha256) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                (shard_hash, len(data), hashlib.sha256(data).digest()),
            )
            if cur.rowcount != 1:
                return False  # another writer registered it meanwhile
            # One statement for every file row, one batch for the terms of those inserted:
            # a shard of 2,000 small files was 4,000 round trips.
            cur.execute(
                "INSERT INTO files (hash, size, sha256, shard) "
                "SELECT h, n, d, %s FROM unnest(%s::bytea[], %s::bigint[], %s::bytea[]) "
                "AS f(h, n, d) ON CONFLICT DO NOTHING RETURNING hash",
                (
                    shard_hash,
                    [r.file_hash for r in files],
                    [r.size for r in files],
                    [r.sha256 for r in files],
                ),
            )
            inserted = {bytes(row[0]) for row in cur.fetchall()}
            terms = [
                (r.file_hash, seq, t.xorb_hash, t.start, t.end, t.unpacked_length)
                for r in files
                if r.file_hash in inserted
                for seq, t in enumerate(r.terms)
            ]
            if terms:
                cur.executemany("INSERT INTO terms VALUES (%s, %s, %s, %s, %s, %s)", terms)
            if dedup:
                cur.executemany(
                    "INSERT INTO dedup (chunk, xorb, chunk_index, shard) VALUES (%s, %s, %s, %s) "
                    "ON CONFLICT DO NOTHING",
                    [(e.chunk_hash, e.xorb_hash, e.chunk_index, shard_hash) for e in dedup],
                )
        return True

    def has_file(self, file_hash: bytes) -> bool:
        """Is a reconstruction of the file stored?"""
        with self.index.transaction("look up a file") as cur:
            cur.execute("SELECT 1 FROM files WHERE hash = %s", (file_hash,))
            return cur.fetchone() is not None

    def file_sizes(self, hashes: Sequence[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        """Size and SHA-256 of each stored file among hashes; the others are left out."""
        with self.index.transaction("look up files") as cur:
            cur.execute(
                "SELECT hash, size, sha256 FROM files WHERE hash = ANY(%s)", (list(hashes),)
            )
            rows = cur.fetchall()
        return {bytes(h): (int(n), None if d is None else bytes(d)) for h, n, d in rows}

    def get_file(self, file_hash: bytes) -> FileRecord:
        """The stored reconstruction of a file; NotFound if no shard registered it."""
        with self.index.transaction("read a file's terms") as cur:
            cur.execute("SELECT size, sha256 FROM files WHERE hash = %s", (file_hash,))
            row = cur.fetchone()
            if row is None:
                raise no_file(file_hash)
            cur.execute(
                "SELECT xorb, chunk_start, chunk_end, unpacked_length FROM terms "
                "WHERE file = %s ORDER BY seq",
                (file_hash,),
            )
            terms = tuple(Term(bytes(x), int(s), int(e), int(n)) for x, s, e, n in cur.fetchall())
        size, sha256 = row
        digest = None if sha256 is None else bytes(sha256)
        return FileRecord(file_hash, int(size), digest, terms)

    def dedup_lookup(self, chunk_hash: bytes) -> list[ChunkLocation]:
        """Every stored location of a global-dedup chunk; empty if none."""
        with self.index.transaction("look up a dedup chunk") as cur:
            cur.execute(
                "SELECT xorb, chunk_index FROM dedup WHERE chunk = %s ORDER BY xorb",
                (chunk_hash,),
            )
            rows = cur.fetchall()
        return [ChunkLocation(bytes(x), int(i)) for x, i in rows]

    # ARK versions

    def bind(self, binding: NewBinding) -> int:
        """Append a new version of binding.ark in one transaction and return its number."""
        problem = binding_problem(binding)
        if problem:
            raise Rejected(problem)
        b = binding
        manifest = whole(b.manifest)
        with self.index.transaction("bind a version") as cur:
            # One binder per ARK at a time, across every server sharing the database.
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (b.ark,))
            latest = self._latest(cur, b.ark)
            version = (latest or 0) + 1
            cur.execute(
                f"INSERT INTO versions (ark, {_BINDING_COLUMNS}) "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                (b.ark, manifest, b.erc, b.updated, version, b.message, latest, b.files, b.bytes),
            )
        return version

    def bind_again(self, ark: str, version: int, erc: str, updated: float, message: str) -> int:
        """Append a new version of ark whose manifest PostgreSQL copies from version's row,
        files and bytes with it, in one transaction; NotFound if there is no such version."""
        with self.index.transaction("bind a version again") as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (ark,))
            latest = self._latest(cur, ark)
            number = (latest or 0) + 1
            cur.execute(
                f"INSERT INTO versions (ark, {_BINDING_COLUMNS}) "
                "SELECT ark, manifest, %s, %s, %s, %s, %s, files, bytes FROM versions "
                "WHERE ark = %s AND version = %s",
                (erc, updated, number, message, latest, ark, version),
            )
            if cur.rowcount != 1:
                raise NotFound(no_version(ark, version, latest, self.place))
        return number

    def get_erc(self, ark: str, version: int) -> str:
        """The ERC column of one version's row, without its manifest."""
        with self.index.transaction("read an ERC record") as cur:
            cur.execute("SELECT erc FROM versions WHERE ark = %s AND version = %s", (ark, version))
            row = cur.fetchone()
            latest = self._latest(cur, ark) if row is None else None
        if row is None:
            raise NotFound(no_version(ark, version, latest, self.place))
        return str(row[0])

    @staticmethod
    def _latest(cur: Cursor, ark: str) -> int | None:
        cur.execute("SELECT max(version) FROM versions WHERE ark = %s", (ark,))
        row = cur.fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def get_binding(self, ark: str, version: int | None = None) -> Binding[bytes]:
        """The given version of an ARK, its latest when None; NotFound if there is none."""
        with self.index.transaction("read a binding") as cur:
            latest = self._latest(cur, ark)
            cur.execute(
                f"SELECT {_BINDING_COLUMNS} FROM versions WHERE ark = %s AND version = %s",
                (ark, latest if version is None else version),
            )
            row = cur.fetchone()
        if row is None:
            raise NotFound(no_version(ark, version, latest, self.place))
        manifest, erc, created, number, message, follows, files, size = row
        return Binding(
            ark,
            bytes(manifest),
            str(erc),
            float(created),
            int(number),
            str(message),
            None if follows is None else int(follows),
            int(files),
            int(size),
        )

    def list_versions(self, ark: str) -> list[VersionInfo]:
        """Every version of an ARK, oldest first; NotFound if unbound."""
        with self.index.transaction("list versions") as cur:
            cur.execute(
                f"SELECT {_INFO_COLUMNS} FROM versions WHERE ark = %s ORDER BY version", (ark,)
            )
            rows = cur.fetchall()
        if not rows:
            raise NotFound(no_version(ark, None, None, self.place))
        return [VersionInfo(ark, *r) for r in rows]

    def list_bindings(self, prefix: str = "") -> list[str]:
        """The bound ARKs that start with prefix, sorted."""
        with self.index.transaction("list ARKs") as cur:
            cur.execute(
                "SELECT DISTINCT ark FROM versions WHERE left(ark, %s) = %s ORDER BY ark",
                (len(prefix), prefix),
            )
            return [str(r[0]) for r in cur.fetchall()]

    def naans(self) -> list[str]:
        """The NAANs of the bound ARKs (ark:NAAN/Name), sorted."""
        with self.index.transaction("list NAANs") as cur:
            cur.execute(
                "SELECT DISTINCT substr(split_part(ark, '/', 1), 5) AS naan FROM versions"
                " ORDER BY naan"
            )
            return [str(r[0]) for r in cur.fetchall()]

    def archived_bytes(self) -> int:
        """The file bytes of every bound version."""
        with self.index.transaction("sum the archived bytes") as cur:
            cur.execute("SELECT coalesce(sum(bytes), 0) FROM versions")
            row = cur.fetchone()
        return 0 if row is None else int(row[0])

    # Whole store

    def collect(self, live: set[bytes], cutoff: float, dry_run: bool = False) -> GcReport:
        """Delete the shards and xorbs that no live file needs and that were written before
        cutoff (Unix time), index rows first, in one transaction that also lowers the
        counters (gc.py); objects with no index row (an abandoned or planted upload) too.
        With dry_run, only count them."""
        with self.index.transaction("list the files and shards") as cur:
            cur.execute("SELECT hash, shard FROM files")
            file_shards = [(bytes(h), bytes(s)) for h, s in cur.fetchall()]
            cur.execute(
                "SELECT DISTINCT f.shard, t.xorb FROM terms t JOIN files f ON f.hash = t.file "
                "UNION SELECT shard, xorb FROM dedup"
            )
            pairs = [(bytes(s), bytes(x)) for s, x in cur.fetchall()]
        keep = kept_shards(file_shards, live)
        shard_objects = {n: (size, when) for n, size, when in self.bucket.written(SHARDS)}
        xorb_objects = {n: (size, when) for n, size, when in self.bucket.written(XORBS)}
        unused_shards = {n for n in shard_objects if _hash_of(n) not in keep}
        dead_shards = {n for n in unused_shards if shard_objects[n][1] < cutoff}
        dead_shard_hashes = {h for n in dead_shards if (h := _hash_of(n)) is not None}
        needed = kept_xorbs(pairs, dead_shard_hashes)
        unused_xorbs = {n for n in xorb_objects if _hash_of(n) not in needed}
        dead_xorbs = {n for n in unused_xorbs if xorb_objects[n][1] < cutoff}
        report = GcReport(
            len(dead_shards),
            sum(shard_objects[n][0] for n in dead_shards),
            len(dead_xorbs),
            sum(xorb_objects[n][0] for n in dead_xorbs),
            len(unused_shards) - len(dead_shards) + len(unused_xorbs) - len(dead_xorbs),
        )
        if dry_run:
            return report
        dead_xorb_hashes = [h for n in dead_xorbs if (h := _hash_of(n)) is not None]
        with self.index.transaction("forget what gc deletes") as cur:
            gone = dict.fromkeys(("xorbs", "xorb_bytes", "shards", "shard_bytes"), 0)
            gone |= {"files": 0, "dedup": 0}
            for h in dead_shard_hashes:
                cur.execute("DELETE FROM dedup WHERE shard = %s", (h,))
                gone["dedup"] += cur.rowcount
                cur.execute(
                    "DELETE FROM terms WHERE file IN (SELECT hash FROM files WHERE shard = %s)",
                    (h,),
                )
                cur.execute("DELETE FROM files WHERE shard = %s", (h,))
                gone["files"] += cur.rowcount
                cur.execute("DELETE FROM shards WHERE hash = %s RETURNING size", (h,))
                for (size,) in cur.fetchall():
                    gone["shards"] += 1
                    gone["shard_bytes"] += int(size)
            for h in dead_xorb_hashes:
                cur.execute("DELETE FROM xorbs WHERE hash = %s RETURNING size", (h,))
                for (size,) in cur.fetchall():
                    gone["xorbs"] += 1
                    gone["xorb_bytes"] += int(size)
            for name, count in gone.items():
                cur.execute("UPDATE counters SET value = value - %s WHERE name = %s", (count, name))
        for n in dead_shards:
            self.bucket.delete(self.bucket.key(SHARDS, n))
        for n in dead_xorbs:
            self.bucket.delete(self.bucket.key(XORBS, n))
        return report

    def ready(self) -> None:
        """The index and the bucket answer."""
        self.index.ready()
        self.bucket.ready()

    def stats(self) -> StoreStats:
        """What the store holds, from the counters the index keeps as rows are inserted."""
        counts = self._counters()
        return StoreStats(*(counts[name] for name in COUNTERS))

    def _counters(self) -> dict[str, int]:
        with self.index.transaction("read the counters") as cur:
            cur.execute("SELECT name, value FROM counters")
            return {str(name): int(value) for name, value in cur.fetchall()}

    def _counter_problems(self) -> list[str]:
        """Where a kept counter disagrees with the rows it counts."""
        with self.index.transaction("count the rows") as cur:
            cur.execute(
                "SELECT (SELECT count(*) FROM xorbs), (SELECT coalesce(sum(size), 0) FROM xorbs),"
                " (SELECT count(*) FROM shards), (SELECT coalesce(sum(size), 0) FROM shards),"
                " (SELECT count(*) FROM files), (SELECT count(*) FROM dedup),"
                " (SELECT count(DISTINCT ark) FROM versions), (SELECT count(*) FROM versions)"
            )
            row = cur.fetchone()
        assert row is not None
        kept = self._counters()
        return [
            f"counter {name} of the index is {kept[name]}, its rows count {int(actual)}; "
            "restore the index from a backup"
            for name, actual in zip(COUNTERS, row, strict=True)
            if kept[name] != int(actual)
        ]

    def check(self, repair: bool = False, sample: int | None = None) -> list[str]:
        """One line per damage found. Every index row is followed; the bytes of every xorb and
        shard are fetched and hashed, or of sample of each (chosen at random) if given.

        repair changes nothing here: an object that no row names is what an interrupted
        upload leaves, and a retry reuses it; other damage needs a backup or a re-upload.
        """
        del repair
        problems = self._check_versions() + self._counter_problems()
        with self.index.transaction("read the index for a check") as cur:
            cur.execute("SELECT hash, size, footer FROM xorbs ORDER BY hash")
            xorbs = [(bytes(h), int(s), bytes(f)) for h, s, f in cur.fetchall()]
            cur.execute("SELECT hash, size, sha256 FROM shards ORDER BY hash")
            shards = [(bytes(h), int(s), bytes(d)) for h, s, d in cur.fetchall()]
            cur.execute("SELECT hash FROM files ORDER BY hash")
            file_hashes = [bytes(r[0]) for r in cur.fetchall()]
            cur.execute("SELECT chunk, xorb, chunk_index FROM dedup")
            dedup = [DedupEntry(bytes(c), bytes(x), int(i)) for c, x, i in cur.fetchall()]
        in_bucket = dict(self.bucket.names(XORBS))
        sound: dict[bytes, bool] = {}
        for h, size, tail in xorbs:
            name = hash_to_string(h)
            if in_bucket.get(name) != size:
                sound[h] = False
                found = in_bucket.get(name)
                problems.append(
                    f"xorb {name} is indexed ({size} bytes) but "
                    f"{'missing' if found is None else f'{found} bytes'} in "
                    f"{self.bucket.where()}; upload the xorb again"
                )
                continue
            try:
                named_footer(tail, size, h)
                sound[h] = True
            except XetError as exc:
                sound[h] = False
                problems.append(f"xorb {name}: its indexed footer is damaged ({exc})")
        for h, _size, _tail in sampled(xorbs, sample):
            if sound[h]:
                problems += self._check_xorb_bytes(h, sound)
        footer_of = checked_footers(sound, self.xorb_footer)
        problems += self._check_shards(sampled(shards, sample), footer_of)
        indexed = {XORBS: {x[0] for x in xorbs}, SHARDS: {x[0] for x in shards}}
        problems += self._object_problems(indexed)
        records = (self.get_file(fh) for fh in file_hashes)
        return problems + row_problems(records, dedup, footer_of)

    def _check_xorb_bytes(self, h: bytes, sound: dict[bytes, bool]) -> list[str]:
        name = hash_to_string(h)
        try:
            stored_xorb(self.bucket.get(self._xorb_key(h)), h)
        except NotFound:
            sound[h] = False
            return [f"xorb {name} vanished from {self.bucket.where()} during the check"]
        except XetError as exc:
            sound[h] = False
            return [
                f"xorb {name} is damaged ({exc}); delete it from the bucket and upload it again"
            ]
        return []

    def _check_versions(self) -> list[str]:
        with self.index.transaction("read versions for a check") as cur:
            cur.execute("SELECT ark, version, follows FROM versions ORDER BY ark, version")
            rows = cur.fetchall()
        problems = []
        for ark, group in itertools.groupby(rows, key=lambda r: r[0]):
            problems += version_problems(str(ark), [(int(v), f) for _, v, f in group])
        return problems

    def _check_shards(
        self, shards: Sequence[tuple[bytes, int, bytes]], footer_of: FooterOf
    ) -> list[str]:
        """Each shard object as stored, and by the rule of its intake (shard_problem)."""
        problems = []
        for h, size, digest in shards:
            name = hash_to_string(h)
            try:
                data = self.bucket.get(self.bucket.key(SHARDS, name))
            except NotFound:
                problems.append(f"shard {name} is indexed but missing in {self.bucket.where()}")
                continue
            if len(data) != size or hashlib.sha256(data).digest() != digest:
                problems.append(f"shard {name} is damaged: the bucket holds other bytes")
                continue
            problem = stored_shard_problem(self, name, data, footer_of)
            if problem:
                problems.append(problem)
        return problems

    def _object_problems(self, indexed: dict[str, set[bytes]]) -> list[str]:
        """Objects in the bucket that no index row names (indexed: the hashes of each kind
        that rows name): orphans, reported apart from damage, and foreign names."""
        lines = []
        for kind in (XORBS, SHARDS):
            for n, _ in self.bucket.names(kind):
                key, h = self.bucket.key(kind, n), _hash_of(n)
                if h is None:
                    lines.append(f"unexpected object {key} in the bucket; move it elsewhere")
                elif h not in indexed[kind]:
                    lines.append(
                        f"{UNINDEXED} {key}: no index row names it (an interrupted upload "
                        "leaves one; a retry reuses it, `arkfs store gc` deletes it)"
                    )
        return lines
