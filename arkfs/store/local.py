"""LocalStore: xorbs and shards as files in one directory, the index in SQLite.

Layout, every file named by the XET hash string of its content:
    root/xorbs/<first 2 hex digits>/<xorb hash>   stored xorbs (chunk region and footer)
    root/shards/<shard hash>                      shards as registered
    root/index.sqlite                             shards, files, terms, dedup, versions

Crash safety rests on one ordering: what a row refers to is durable before the row commits.
A xorb or shard file appears only whole (write_atomic), and a put returns only after the
file, its directory entry and any index transaction are fsynced (WAL, synchronous=FULL).
put_shard writes the shard file before the transaction that inserts it with its files and
dedup chunks, and accepts only records whose xorbs are already stored. A crash therefore
leaves at worst a temp file (removed on open) or a shard file that no row names yet (which
a retry overwrites with the same bytes); neither is damage.

An ARK's versions are rows that are only ever inserted. bind reads the latest number and
inserts the next in one write transaction (BEGIN IMMEDIATE takes the write lock first), so
concurrent binders, threads or processes, get distinct consecutive numbers.

Index schema 2 replaced schema 1's table `bindings` (one replaceable row per ARK) by
`versions`; open migrates a schema-1 index in one transaction, each binding becoming v1.
"""

import hashlib
import itertools
import os
import sqlite3
import struct
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

# The manifest format is imported for one purpose only: the migration from schema 1 counts
# the files and bytes of each binding's manifest, which schema 2 keeps beside it.
from arkfs.archive.manifest import Manifest
from arkfs.archive.record import VersionInfo
from arkfs.ark.errors import ArkError
from arkfs.store.base import (
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
from arkfs.store.errors import (
    NotFound,
    OutOfRange,
    Rejected,
    StoreCorrupt,
    StoreError,
    StoreFull,
    is_full,
)
from arkfs.store.gc import GcReport, kept_shards, kept_xorbs
from arkfs.store.shards import stored_shard_problem
from arkfs.util.atomic import fsync_dir, is_temp, remove_stale_temps, stale_temps, write_atomic
from arkfs.util.msgpack_file import pieces
from arkfs.xet.errors import XetError
from arkfs.xet.hashing import hash_to_string, string_to_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.trust import named_footer
from arkfs.xet.xorb import MAX_FOOTER_TAIL, XorbFooter, stored_xorb

SCHEMA_VERSION = 2
INDEX_NAME = "index.sqlite"
# SQLite's page cache (default 2 MiB): a 1M-file store's index is ~440 MB, and inserts of
# random hash keys touch pages all over it.
INDEX_CACHE_KIB = 64 * 1024
QUERY_PARAMETERS = 500  # hashes per IN (...) query, under SQLite's parameter limit
XORBS, SHARDS = "xorbs", "shards"

_U32 = struct.Struct("<I")

# The small columns come first, so that listing versions never reads a manifest's pages.
_VERSIONS_TABLE = """CREATE TABLE versions (
    ark TEXT NOT NULL,
    version INTEGER NOT NULL,
    created REAL NOT NULL,
    follows INTEGER,
    files INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    message TEXT NOT NULL,
    erc TEXT NOT NULL,
    manifest BLOB NOT NULL,
    PRIMARY KEY (ark, version)
)"""
_INFO_COLUMNS = "version, created, message, follows, files, bytes"  # VersionInfo after ark
_BINDING_COLUMNS = "manifest, erc, created, version, message, follows, files, bytes"
_INSERT_VERSION = (
    f"INSERT INTO versions (ark, {_BINDING_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# bind inserts the manifest as zeros, then writes it in pieces: a bound blob is copied
# twice inside SQLite (the bound value, then the record), 200 MB at 1,000,000 files.
_BIND_VERSION = _INSERT_VERSION.replace("?, ?", "?, zeroblob(?)", 1)
# bind_again: a new row whose manifest, files and bytes are those of another version's row.
_BIND_AGAIN = (
    f"INSERT INTO versions (ark, {_BINDING_COLUMNS}) SELECT ark, manifest, ?, ?, ?, ?, ?, "
    "files, bytes FROM versions WHERE ark = ? AND version = ?"
)

_SCHEMA = (
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE shards (
        hash BLOB PRIMARY KEY,
        size INTEGER NOT NULL,
        sha256 BLOB NOT NULL
    ) WITHOUT ROWID""",
    """CREATE TABLE files (
        hash BLOB PRIMARY KEY,
        size INTEGER NOT NULL,
        sha256 BLOB,
        shard BLOB NOT NULL REFERENCES shards (hash)
    ) WITHOUT ROWID""",
    """CREATE TABLE terms (
        file BLOB NOT NULL REFERENCES files (hash),
        seq INTEGER NOT NULL,
        xorb BLOB NOT NULL,
        chunk_start INTEGER NOT NULL,
        chunk_end INTEGER NOT NULL,
        unpacked_length INTEGER NOT NULL,
        PRIMARY KEY (file, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE dedup (
        chunk BLOB NOT NULL,
        xorb BLOB NOT NULL,
        chunk_index INTEGER NOT NULL,
        shard BLOB NOT NULL REFERENCES shards (hash),
        PRIMARY KEY (chunk, xorb)
    ) WITHOUT ROWID""",
    _VERSIONS_TABLE,
)


@contextmanager
def _sqlite_errors(index: Path) -> Iterator[None]:
    """Turn sqlite3 errors into store errors that say what to do."""
    try:
        yield
    except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise  # a bug of the caller, such as use after close
    except sqlite3.OperationalError as exc:
        # sqlite_errorcode is set by sqlite3 itself, not on an error made by hand
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL:
            raise StoreFull(f"index {index}: {exc}; free space on its disk") from exc
        raise StoreError(f"index {index}: {exc}; retry, or check the disk and permissions") from exc
    except sqlite3.DatabaseError as exc:
        raise StoreCorrupt(f"index {index} is damaged ({exc}); restore it from a backup") from exc


class LocalStore:
    """A store in a local directory; safe to share between threads and processes."""

    def __init__(self, root: Path, conn: sqlite3.Connection) -> None:
        """Use LocalStore.open."""
        self.root = root
        self._index = root / INDEX_NAME
        self._conn = conn
        self._lock = threading.Lock()
        self._footers = FooterCache()

    @classmethod
    def open(cls, root: Path | str, create: bool = True) -> "LocalStore":
        """Open the store at root, creating it if allowed; remove leftovers of crashed writes."""
        root = Path(root)
        index = root / INDEX_NAME
        if not index.exists():
            if not create:
                raise NotFound(f"no arkfs store at {root}: {INDEX_NAME} is missing")
            _prepare_new_root(root)
        if not create and _read_only_media(root):
            return cls._open_read_only(root, index)
        with _sqlite_errors(index):
            conn = sqlite3.connect(
                index, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute("PRAGMA foreign_keys=ON")
                conn.execute(f"PRAGMA cache_size=-{INDEX_CACHE_KIB}")
            except BaseException:
                conn.close()
                raise
        store = cls(root, conn)
        try:
            store._init_schema(create)
            store._ensure_layout()
            for directory in store._temp_dirs():
                remove_stale_temps(directory)
        except BaseException:
            store.close()
            raise
        return store

    @classmethod
    def _open_read_only(cls, root: Path, index: Path) -> "LocalStore":
        """Open a store on read-only media (a DVD, a read-only mount) for reading: its index
        immutable, as SQLite can create no lock or WAL files there."""
        wal = index.with_name(INDEX_NAME + "-wal")
        if wal.exists() and wal.stat().st_size:
            raise StoreError(
                f"the store at {root} is on read-only media with its index's last writes "
                f"still in {wal.name}: checkpoint it where it was written (close every "
                "`arkfs serve` of it, or run `sqlite3 index.sqlite 'PRAGMA wal_checkpoint'`)"
            )
        with _sqlite_errors(index):
            uri = f"file:{urllib.parse.quote(str(index.resolve()))}?immutable=1"
            conn = sqlite3.connect(uri, uri=True, isolation_level=None, check_same_thread=False)
        store = cls(root, conn)
        try:
            with store._db() as db:
                row = db.execute("SELECT version FROM schema_version").fetchone()
            if row is None or row[0] != SCHEMA_VERSION:
                raise StoreError(
                    f"the store at {root} on read-only media has index schema version "
                    f"{row[0] if row else 'unknown'}; this arkfs reads version "
                    f"{SCHEMA_VERSION} and cannot migrate it there"
                )
        except BaseException:
            store.close()
            raise
        return store

    def close(self) -> None:
        """Close the index connection."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> "LocalStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _db(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One transaction on the index: rolled back on any error, committed otherwise."""
        with self._lock, _sqlite_errors(self._index):
            self._conn.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield self._conn
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:
                    self._conn.execute("ROLLBACK")
                raise

    def _init_schema(self, create: bool) -> None:
        with self._db(write=True) as db:
            found = db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if found is not None:
                row = db.execute("SELECT version FROM schema_version").fetchone()
                if row is not None and row[0] == 1:
                    _migrate_from_1(db)
                elif row is None or row[0] != SCHEMA_VERSION:
                    raise StoreError(
                        f"the store at {self.root} has index schema version "
                        f"{row[0] if row else 'unknown'}; this arkfs reads version "
                        f"{SCHEMA_VERSION}: use the arkfs release that wrote it"
                    )
                return
            if not create:
                raise NotFound(f"no arkfs store at {self.root}: its index has no schema")
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
        fsync_dir(self.root)  # the new index file's entry

    def _ensure_layout(self) -> None:
        """Create missing store directories, and make their entries durable."""
        xorbs = self.root / XORBS
        wanted = [self.root / SHARDS, xorbs, *(xorbs / f"{i:02x}" for i in range(256))]
        parents = set()
        for directory in wanted:
            try:
                directory.mkdir()
            except FileExistsError:
                continue
            parents.add(directory.parent)
        for parent in parents:
            fsync_dir(parent)

    def _temp_dirs(self) -> list[Path]:
        xorbs = self.root / XORBS
        return [
            self.root,
            self.root / SHARDS,
            xorbs,
            *sorted(d for d in xorbs.iterdir() if d.is_dir()),
        ]

    def _xorb_path(self, h: bytes) -> Path:
        name = hash_name(h, "xorb")
        return self.root / XORBS / name[:2] / name

    # Xorbs

    def has_xorb(self, h: bytes) -> bool:
        """Is xorb h stored?"""
        return self._xorb_path(h).is_file()

    def put_xorb(self, h: bytes, stored: bytes) -> bool:
        """Store xorb h in its stored form (chunk region and footer); False if already there."""
        path = self._xorb_path(h)
        if path.is_file():
            return False
        footer = stored_footer(h, stored)
        self._write(path, stored)
        self._footers.put(h, footer)
        return True

    def _write(self, path: Path, data: bytes) -> None:
        try:
            write_atomic(path, data)
        except OSError as exc:
            if is_full(exc):
                raise StoreFull(
                    f"cannot write {path}: {exc.strerror}; free space on its disk"
                ) from exc
            raise StoreError(
                f"cannot write {path}: {exc.strerror or exc}; check free space and permissions"
            ) from exc

    def _open_xorb(self, h: bytes) -> tuple[int, int, str]:
        """An open descriptor of xorb h, its size, and its name."""
        path = self._xorb_path(h)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            raise NotFound(f"xorb {path.name} is not in the store at {self.root}") from None
        return fd, os.fstat(fd).st_size, path.name

    def _pread(self, fd: int, name: str, size: int, start: int, end: int) -> bytes:
        data = os.pread(fd, end - start, start)
        if len(data) != end - start:
            raise StoreCorrupt(
                f"xorb {name} shrank to {len(data) + start} bytes while read (was {size}); "
                "run `arkfs store check`"
            )
        return data

    def xorb_size(self, h: bytes) -> int:
        """Size in bytes of stored xorb h."""
        fd, size, _ = self._open_xorb(h)
        os.close(fd)
        return size

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        """Bytes [start, end) of stored xorb h; OutOfRange unless 0 <= start <= end <= size."""
        data, fd = self.read_xorb_file(h, start, end)
        os.close(fd)
        return data

    def read_xorb_file(self, h: bytes, start: int, end: int) -> tuple[bytes, int]:
        """read_xorb, and a descriptor open on the xorb's file (the caller closes it)."""
        fd, size, name = self._open_xorb(h)
        try:
            if not 0 <= start <= end <= size:
                raise OutOfRange(f"bytes {start}..{end} are not within xorb {name} ({size} bytes)")
            return self._pread(fd, name, size, start, end), fd
        except BaseException:
            os.close(fd)
            raise

    def xorb_footer(self, h: bytes) -> XorbFooter:
        """The footer of stored xorb h, checked against its name; StoreCorrupt if damaged."""
        footer = self._footers.get(h)
        if footer is not None:
            return footer
        fd, size, name = self._open_xorb(h)
        try:
            if size < 4:
                raise StoreCorrupt(f"xorb {name} is only {size} bytes; run `arkfs store check`")
            tail_len = _U32.unpack(self._pread(fd, name, size, size - 4, size))[0] + 4
            if tail_len > min(size, MAX_FOOTER_TAIL):
                raise StoreCorrupt(
                    f"xorb {name} ({size} bytes) claims a {tail_len}-byte footer; "
                    "run `arkfs store check`"
                )
            tail = self._pread(fd, name, size, size - tail_len, size)
        finally:
            os.close(fd)
        try:
            footer = named_footer(tail, size, h)
        except XetError as exc:
            raise StoreCorrupt(f"xorb {name} is damaged: {exc}; run `arkfs store check`") from None
        self._footers.put(h, footer)
        return footer

    def xorb_url(self, h: bytes, ttl: int) -> str | None:
        """None: a directory has no URLs; the server serves its xorbs itself."""
        return None

    # Shards, files, dedup

    def put_shard(
        self,
        shard_hash: bytes,
        data: bytes,
        files: Sequence[FileRecord],
        dedup: Sequence[DedupEntry],
    ) -> bool:
        """Store a shard with the files and dedup chunks it registers; False if already there.

        Every record must agree with the footers of stored xorbs (Rejected otherwise, and
        nothing is stored). The shard file is durable before the index rows commit.
        """
        name = hash_name(shard_hash, "shard")
        with self._db() as db:
            if _has_shard(db, shard_hash):
                return False
        problem = records_problem(files, dedup, self.xorb_footer)
        if problem:
            raise Rejected(f"shard {name} not stored: {problem}")
        self._write(self.root / SHARDS / name, data)
        with self._db(write=True) as db:
            if _has_shard(db, shard_hash):
                return False  # another writer registered it meanwhile
            gone = self._missing_xorbs(files, dedup)  # `store gc` may have deleted one since
            if gone:
                raise Rejected(f"shard {name} not stored: xorb {gone} is not stored; upload it")
            db.execute(
                "INSERT INTO shards (hash, size, sha256) VALUES (?, ?, ?)",
                (shard_hash, len(data), hashlib.sha256(data).digest()),
            )
            for record in files:
                inserted = db.execute(
                    "INSERT INTO files (hash, size, sha256, shard) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (record.file_hash, record.size, record.sha256, shard_hash),
                ).rowcount
                if inserted:
                    db.executemany(
                        "INSERT INTO terms VALUES (?, ?, ?, ?, ?, ?)",
                        (
                            (record.file_hash, seq, t.xorb_hash, t.start, t.end, t.unpacked_length)
                            for seq, t in enumerate(record.terms)
                        ),
                    )
            db.executemany(
                "INSERT INTO dedup (chunk, xorb, chunk_index, shard) VALUES (?, ?, ?, ?) "
                "ON CONFLICT DO NOTHING",
                ((e.chunk_hash, e.xorb_hash, e.chunk_index, shard_hash) for e in dedup),
            )
        return True

    def _missing_xorbs(self, files: Sequence[FileRecord], dedup: Sequence[DedupEntry]) -> str:
        """The name of a xorb the records name that is not stored ('' if none)."""
        named = {t.xorb_hash for r in files for t in r.terms} | {e.xorb_hash for e in dedup}
        return next((hash_to_string(h) for h in named if not self._xorb_path(h).exists()), "")

    def has_file(self, file_hash: bytes) -> bool:
        """Is a reconstruction of the file stored?"""
        with self._db() as db:
            return bool(db.execute("SELECT 1 FROM files WHERE hash = ?", (file_hash,)).fetchone())

    def file_sizes(self, hashes: Sequence[bytes]) -> dict[bytes, tuple[int, bytes | None]]:
        """Size and SHA-256 of each stored file among hashes; the others are left out."""
        found: dict[bytes, tuple[int, bytes | None]] = {}
        with self._db() as db:
            for start in range(0, len(hashes), QUERY_PARAMETERS):
                batch = hashes[start : start + QUERY_PARAMETERS]
                marks = ",".join("?" * len(batch))
                query = f"SELECT hash, size, sha256 FROM files WHERE hash IN ({marks})"
                found.update((h, (size, sha)) for h, size, sha in db.execute(query, batch))
        return found

    def get_file(self, file_hash: bytes) -> FileRecord:
        """The stored reconstruction of a file; NotFound if no shard registered it."""
        with self._db() as db:
            row = db.execute(
                "SELECT size, sha256 FROM files WHERE hash = ?", (file_hash,)
            ).fetchone()
            if row is None:
                raise no_file(file_hash)
            terms = db.execute(
                "SELECT xorb, chunk_start, chunk_end, unpacked_length FROM terms "
                "WHERE file = ? ORDER BY seq",
                (file_hash,),
            ).fetchall()
        return FileRecord(file_hash, row[0], row[1], tuple(Term(*t) for t in terms))

    def dedup_lookup(self, chunk_hash: bytes) -> list[ChunkLocation]:
        """Every stored location of a global-dedup chunk; empty if none."""
        with self._db() as db:
            rows = db.execute(
                "SELECT xorb, chunk_index FROM dedup WHERE chunk = ? ORDER BY xorb", (chunk_hash,)
            ).fetchall()
        return [ChunkLocation(*r) for r in rows]

    # ARK versions

    def bind(self, binding: NewBinding) -> int:
        """Append a new version of binding.ark and return its number; nothing is replaced.

        Rejected if binding_problem finds one; the version follows the latest (None for v1).
        """
        problem = binding_problem(binding)
        if problem:
            raise Rejected(problem)
        b = binding
        with self._db(write=True) as db:
            latest = _latest(db, b.ark)
            version = (latest or 0) + 1
            values = (b.ark, len(b.manifest), b.erc, b.updated, version, b.message, latest)
            row = db.execute(_BIND_VERSION, (*values, b.files, b.bytes)).lastrowid
            assert row is not None
            with db.blobopen("versions", "manifest", row) as blob:
                for piece in pieces(b.manifest):
                    blob.write(piece)
        return version

    def bind_again(self, ark: str, version: int, erc: str, updated: float, message: str) -> int:
        """Append a new version of ark whose manifest SQLite copies from version's row, files
        and bytes with it; NotFound if there is no such version."""
        with self._db(write=True) as db:
            latest = _latest(db, ark)
            number = (latest or 0) + 1
            copied = db.execute(_BIND_AGAIN, (erc, updated, number, message, latest, ark, version))
            if copied.rowcount != 1:
                raise NotFound(self._no_version(ark, version, latest))
        return number

    def get_erc(self, ark: str, version: int) -> str:
        """The ERC column of one version's row: its manifest's pages are not read."""
        with self._db() as db:
            row = db.execute(
                "SELECT erc FROM versions WHERE ark = ? AND version = ?", (ark, version)
            ).fetchone()
            if row is None:
                raise NotFound(self._no_version(ark, version, _latest(db, ark)))
        return str(row[0])

    def get_binding(self, ark: str, version: int | None = None) -> Binding[bytes]:
        """The given version of an ARK, its latest when None; NotFound if there is none."""
        with self._db() as db:
            latest = _latest(db, ark)
            row = db.execute(
                f"SELECT {_BINDING_COLUMNS} FROM versions WHERE ark = ? AND version = ?",
                (ark, latest if version is None else version),
            ).fetchone()
        if row is None:
            raise NotFound(self._no_version(ark, version, latest))
        return Binding(ark, *row)

    def list_versions(self, ark: str) -> list[VersionInfo]:
        """Every version of an ARK, oldest first; NotFound if unbound."""
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_INFO_COLUMNS} FROM versions WHERE ark = ? ORDER BY version", (ark,)
            ).fetchall()
        if not rows:
            raise NotFound(self._no_version(ark, None, None))
        return [VersionInfo(ark, *r) for r in rows]

    def _no_version(self, ark: str, version: int | None, latest: int | None) -> str:
        return no_version(ark, version, latest, f"the store at {self.root}")

    def list_bindings(self, prefix: str = "") -> list[str]:
        """The bound ARKs that start with prefix, sorted."""
        with self._db() as db:
            rows = db.execute(
                "SELECT DISTINCT ark FROM versions WHERE substr(ark, 1, ?) = ? ORDER BY ark",
                (len(prefix), prefix),
            ).fetchall()
        return [r[0] for r in rows]

    def naans(self) -> list[str]:
        """The NAANs of the bound ARKs (ark:NAAN/Name), sorted."""
        with self._db() as db:
            rows = db.execute(
                "SELECT DISTINCT substr(ark, 5, instr(ark, '/') - 5) AS naan FROM versions"
                " ORDER BY naan"
            ).fetchall()
        return [r[0] for r in rows]

    def archived_bytes(self) -> int:
        """The file bytes of every bound version."""
        with self._db() as db:
            return int(db.execute("SELECT coalesce(sum(bytes), 0) FROM versions").fetchone()[0])

    # Whole store

    def collect(self, live: set[bytes], cutoff: float, dry_run: bool = False) -> GcReport:
        """Delete the shards and xorbs that no live file needs and that are older than
        cutoff (Unix time) (gc.py); with dry_run, only count them.

        The plan is made and carried out inside one write transaction, and put_shard checks
        its xorbs are there inside its own: a shard registered meanwhile either keeps its
        xorbs or is refused, never left naming a deleted one.
        """
        with self._db(write=not dry_run) as db:
            dead, shard_bytes, old, young = self._gc_plan(db, live, cutoff)
            report = GcReport(len(dead), shard_bytes, len(old), sum(old.values()), young)
            if dry_run:
                return report
            for h in dead:
                db.execute("DELETE FROM dedup WHERE shard = ?", (h,))
                db.execute(
                    "DELETE FROM terms WHERE file IN (SELECT hash FROM files WHERE shard = ?)",
                    (h,),
                )
                db.execute("DELETE FROM files WHERE shard = ?", (h,))
                db.execute("DELETE FROM shards WHERE hash = ?", (h,))
            for path in [*dead.values(), *old]:
                path.unlink(missing_ok=True)
        return report

    def _gc_plan(
        self, db: sqlite3.Connection, live: set[bytes], cutoff: float
    ) -> tuple[dict[bytes, Path], int, dict[Path, int], int]:
        """What gc deletes: the dead shards (hash to file), their bytes, the old unneeded
        xorb files with their sizes, and how many unreferenced ones are young."""
        shards = dict(db.execute("SELECT hash, size FROM shards").fetchall())
        keep = kept_shards(db.execute("SELECT hash, shard FROM files").fetchall(), live)
        unused = {h: self.root / SHARDS / hash_name(h, "shard") for h in shards if h not in keep}
        dead = {h: path for h, path in unused.items() if _mtime(path) < cutoff}
        pairs = db.execute(
            "SELECT DISTINCT f.shard, t.xorb FROM terms t JOIN files f ON f.hash = t.file "
            "UNION SELECT shard, xorb FROM dedup"
        ).fetchall()
        needed = kept_xorbs(pairs, set(dead))
        unneeded = [p for p, h in self._xorb_files() if h is not None and h not in needed]
        old = {p: p.stat().st_size for p in unneeded if _mtime(p) < cutoff}
        young = len(unused) - len(dead) + len(unneeded) - len(old)
        return dead, sum(shards[h] for h in dead), old, young

    def _xorb_files(self) -> Iterator[tuple[Path, bytes | None]]:
        """Every non-temp entry under xorbs/, with its hash if it is where a xorb belongs."""
        for directory in sorted((self.root / XORBS).iterdir()):
            if not directory.is_dir():
                yield directory, None
                continue
            for path in sorted(directory.iterdir()):
                if is_temp(path.name):
                    continue
                h = _hash_named(path)
                yield path, (h if path.name[:2] == directory.name else None)

    def ready(self) -> None:
        """The index answers and the xorb directory is there."""
        with self._db() as db:
            db.execute("SELECT 1").fetchone()
        if not (self.root / XORBS).is_dir():
            raise StoreError(f"the store at {self.root} has no {XORBS} directory")

    def stats(self) -> StoreStats:
        """What the store holds."""
        xorbs = xorb_bytes = 0
        for path, h in self._xorb_files():
            if h is not None:
                xorbs += 1
                xorb_bytes += path.stat().st_size
        with self._db() as db:
            shards, shard_bytes = db.execute(
                "SELECT count(*), coalesce(sum(size), 0) FROM shards"
            ).fetchone()
            files, dedup = (
                db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                for table in ("files", "dedup")
            )
            bindings, versions = db.execute(
                "SELECT count(DISTINCT ark), count(*) FROM versions"
            ).fetchone()
        return StoreStats(xorbs, xorb_bytes, shards, shard_bytes, files, dedup, bindings, versions)

    def check(self, repair: bool = False, sample: int | None = None) -> list[str]:
        """One line per damage found: every xorb is parsed and hashed, every row followed.

        repair only removes leftover temp files of interrupted writes (never the temp file
        of a live writer); other damage needs a backup or a re-upload.
        """
        problems = self._check_temps(repair)
        problems += self._check_index()
        problems += self._check_versions()
        # Rows first: the xorbs they name were stored before they committed, so a put that
        # runs during the check cannot make a row seem to point nowhere.
        with self._db() as db:
            file_hashes = [r[0] for r in db.execute("SELECT hash FROM files ORDER BY hash")]
            dedup = [
                DedupEntry(*r) for r in db.execute("SELECT chunk, xorb, chunk_index FROM dedup")
            ]
        sound: dict[bytes, bool] = {}
        problems += self._check_xorbs(sound, sample)
        footer_of = checked_footers(sound, self.xorb_footer)
        problems += self._check_shards(footer_of)

        records = (self.get_file(fh) for fh in file_hashes)
        return problems + row_problems(records, dedup, footer_of)

    def _check_temps(self, repair: bool) -> list[str]:
        problems = []
        for directory in self._temp_dirs():
            for path in stale_temps(directory):
                if repair:
                    path.unlink(missing_ok=True)
                    problems.append(f"removed leftover temp file {path}")
                else:
                    problems.append(
                        f"leftover temp file {path} from an interrupted write; "
                        "`arkfs store check --repair` removes it"
                    )
        return problems

    def _check_index(self) -> list[str]:
        with self._db() as db:
            integrity = [r[0] for r in db.execute("PRAGMA integrity_check")]
            dangling = db.execute("PRAGMA foreign_key_check").fetchall()
        problems = [f"index {self._index}: {line}" for line in integrity if line != "ok"]
        problems += [
            f"index {self._index}: a row of table {table} refers to a missing row of {parent}"
            for table, _rowid, parent, _fk in dangling
        ]
        return problems

    def _check_versions(self) -> list[str]:
        with self._db() as db:
            rows = db.execute(
                "SELECT ark, version, follows FROM versions ORDER BY ark, version"
            ).fetchall()
        problems = []
        for ark, group in itertools.groupby(rows, key=lambda r: r[0]):
            problems += version_problems(ark, [(v, f) for _, v, f in group])
        return problems

    def _check_xorbs(self, sound: dict[bytes, bool], sample: int | None) -> list[str]:
        """Parse and hash every stored xorb (or sample of them; the others by their footer),
        noting in sound whether each one is."""
        problems = []
        found = list(self._xorb_files())
        hashed = set(sampled([h for _, h in found if h is not None], sample))
        for path, h in found:
            if h is None:
                problems.append(
                    f"unexpected entry {path} among the xorbs; move it out of the store"
                )
                continue
            try:
                if h not in hashed:
                    self.xorb_footer(h)
                    sound[h] = True
                    continue
                stored_xorb(path.read_bytes(), h)
                sound[h] = True
            except (XetError, StoreCorrupt) as exc:
                sound[h] = False
                problems.append(
                    f"xorb {path.name} is damaged ({exc}); restore {path} from a backup, "
                    "or delete it and upload the xorb again"
                )
        return problems

    def _check_shards(self, footer_of: FooterOf) -> list[str]:
        """Each shard file as stored, and by the rule of its intake (shard_problem)."""
        with self._db() as db:
            rows = db.execute("SELECT hash, size, sha256 FROM shards ORDER BY hash").fetchall()
        problems = []
        for h, size, digest in rows:
            path = self.root / SHARDS / hash_to_string(h)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                problems.append(f"shard {path.name} is indexed but its file {path} is missing")
                continue
            if len(data) != size or hashlib.sha256(data).digest() != digest:
                problems.append(
                    f"shard {path.name} is damaged: {path} differs from what was stored"
                )
                continue
            problem = stored_shard_problem(self, path.name, data, footer_of)
            if problem:
                problems.append(problem)
        for path in (self.root / SHARDS).iterdir():
            if not is_temp(path.name) and _hash_named(path) is None:
                problems.append(
                    f"unexpected entry {path} among the shards; move it out of the store"
                )
        return problems


def _latest(db: sqlite3.Connection, ark: str) -> int | None:
    """The number of the latest version of ark, or None if it has none."""
    latest: int | None = db.execute(
        "SELECT max(version) FROM versions WHERE ark = ?", (ark,)
    ).fetchone()[0]
    return latest


def _migrate_from_1(db: sqlite3.Connection) -> None:
    """Schema 1 to 2 inside the caller's transaction: each binding becomes v1 of its ARK."""
    db.execute(_VERSIONS_TABLE)
    for ark, manifest, erc, updated in db.execute(
        "SELECT ark, manifest, erc, updated FROM bindings"
    ):
        files, size = _manifest_summary(manifest)
        db.execute(_INSERT_VERSION, (ark, manifest, erc, updated, 1, "", None, files, size))
    db.execute("DROP TABLE bindings")
    db.execute("UPDATE schema_version SET version = 2")


def _manifest_summary(manifest: bytes) -> tuple[int, int]:
    """The files and bytes of a manifest; (0, 0) if it does not parse.

    Schema 1 never parsed manifests; one that does not parse must not keep the store shut.
    """
    try:
        m = Manifest.from_msgpack(manifest)
    except (ArkError, TypeError, ValueError):
        return 0, 0
    return m.file_count, m.total_size


def _has_shard(db: sqlite3.Connection, shard_hash: bytes) -> bool:
    return db.execute("SELECT 1 FROM shards WHERE hash = ?", (shard_hash,)).fetchone() is not None


def _read_only_media(root: Path) -> bool:
    """Is root on a read-only filesystem, or not writable by this process?"""
    try:
        return bool(os.statvfs(root).f_flag & os.ST_RDONLY) or not os.access(root, os.W_OK)
    except OSError:
        return False


def _mtime(path: Path) -> float:
    """When path was last written (0 if it is gone: nothing to protect)."""
    try:
        return path.stat().st_mtime
    except FileNotFoundError:
        return 0.0


def _hash_named(path: Path) -> bytes | None:
    """The hash a regular file is named by (as hash_to_string spells it), or None."""
    if not path.is_file():
        return None
    try:
        h = string_to_hash(path.name)
    except XetError:
        return None
    return h if hash_to_string(h) == path.name else None


def _prepare_new_root(root: Path) -> None:
    """Create root for a new store; refuse a directory that holds something else."""
    root.mkdir(parents=True, exist_ok=True)
    ours = {XORBS, SHARDS, INDEX_NAME, f"{INDEX_NAME}-wal", f"{INDEX_NAME}-shm"}
    foreign = sorted(p.name for p in root.iterdir() if p.name not in ours and not is_temp(p.name))
    if foreign:
        raise StoreError(
            f"{root} holds {', '.join(foreign[:3])} but no arkfs store; "
            "create the store in an empty or new directory"
        )
    fsync_dir(root.parent)
