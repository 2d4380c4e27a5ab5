"""The PostgreSQL index of a scaled store: a psycopg 3 connection pool, bounded transactions,
the schema, and database errors as store errors.

psycopg is blocking, so callers run it in worker threads; the pool hands each thread its own
connection. Every wait is bounded: connecting (CONNECT_TIMEOUT), waiting for a pooled
connection (POOL_TIMEOUT) and each statement (STATEMENT_TIMEOUT). A pooled connection is
checked before use, so the pool recovers by itself once the database is back.
"""

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import psycopg.conninfo
import psycopg_pool
import psycopg_pool.base
import psycopg_pool.pool

from arkfs.store.errors import Rejected, StoreCorrupt, StoreError, WrongStore

SCHEMA_VERSION = 2  # 2: the store's identity (store_identity)
CONNECT_TIMEOUT = 5  # seconds to connect to the database
# A caller waits this long for a pooled connection (then: 503 with Retry-After), so that a
# client's retries, within its 10 s deadline, outlast a short database outage.
POOL_TIMEOUT = 2.0
STATEMENT_TIMEOUT_MS = 30_000  # the longest statement the server lets run
RECONNECT_EVERY = 1.0  # seconds between the pool's attempts to reach a database that is down
Row = tuple[Any, ...]  # a result row; callers convert each value to its type
Cursor = psycopg.Cursor[Row]
_SCHEMA_LOCK = 0x61726B6673  # advisory lock key ('arkfs') serializing schema changes

# Rows refer only to what is already stored: terms and dedup rows name indexed xorbs, and a
# xorb row commits only after its object is in the bucket. Versions are only inserted.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE IF NOT EXISTS xorbs (
        hash BYTEA PRIMARY KEY,
        size BIGINT NOT NULL,
        footer BYTEA NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS shards (
        hash BYTEA PRIMARY KEY,
        size BIGINT NOT NULL,
        sha256 BYTEA NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS files (
        hash BYTEA PRIMARY KEY,
        size BIGINT NOT NULL,
        sha256 BYTEA,
        shard BYTEA NOT NULL REFERENCES shards (hash)
    )""",
    """CREATE TABLE IF NOT EXISTS terms (
        file BYTEA NOT NULL REFERENCES files (hash),
        seq INTEGER NOT NULL,
        xorb BYTEA NOT NULL REFERENCES xorbs (hash),
        chunk_start INTEGER NOT NULL,
        chunk_end INTEGER NOT NULL,
        unpacked_length BIGINT NOT NULL,
        PRIMARY KEY (file, seq)
    )""",
    """CREATE TABLE IF NOT EXISTS dedup (
        chunk BYTEA NOT NULL,
        xorb BYTEA NOT NULL REFERENCES xorbs (hash),
        chunk_index INTEGER NOT NULL,
        shard BYTEA NOT NULL REFERENCES shards (hash),
        PRIMARY KEY (chunk, xorb)
    )""",
    """CREATE TABLE IF NOT EXISTS versions (
        ark TEXT NOT NULL,
        version INTEGER NOT NULL,
        created DOUBLE PRECISION NOT NULL,
        follows INTEGER,
        files BIGINT NOT NULL,
        bytes BIGINT NOT NULL,
        message TEXT NOT NULL,
        erc TEXT NOT NULL,
        manifest BYTEA NOT NULL,
        PRIMARY KEY (ark, version)
    )""",
)

# Schema version 2: the store's identity (identity.py), one row, as in the bucket's marker.
_IDENTITY_TABLE = """CREATE TABLE IF NOT EXISTS store_identity (
    store_id TEXT NOT NULL,
    prefix TEXT NOT NULL
)"""


# Store.stats() counts, kept in the index as they change: each insert statement adds what it
# inserted (its transition table), in its own transaction, so a count never walks a table.
COUNTERS = ("xorbs", "xorb_bytes", "shards", "shard_bytes", "files", "dedup", "arks", "versions")
_COUNTED = {  # table: (counter, what each inserted row adds) pairs
    "xorbs": (("xorbs", "1"), ("xorb_bytes", "size")),
    "shards": (("shards", "1"), ("shard_bytes", "size")),
    "files": (("files", "1"),),
    "dedup": (("dedup", "1"),),
    "versions": (("versions", "1"), ("arks", "CASE WHEN version = 1 THEN 1 ELSE 0 END")),
}


def _counter_statements() -> list[str]:
    """The counters table, and a statement-level trigger on each counted table."""
    statements = [
        "CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value BIGINT NOT NULL)",
        "INSERT INTO counters SELECT unnest(%s::text[]), 0 ON CONFLICT DO NOTHING",
    ]
    for table, counts in _COUNTED.items():
        updates = " ".join(
            f"UPDATE counters SET value = value + (SELECT coalesce(sum({expr}), 0) "
            f"FROM inserted) WHERE name = '{name}';"
            for name, expr in counts
        )
        statements += [
            f"""CREATE OR REPLACE FUNCTION count_{table}() RETURNS trigger LANGUAGE plpgsql
            AS $$ BEGIN {updates} RETURN NULL; END $$""",
            f"""CREATE OR REPLACE TRIGGER count_{table} AFTER INSERT ON {table}
            REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT
            EXECUTE FUNCTION count_{table}()""",
        ]
    return statements


def describe(dsn: str) -> str:
    """A database URL without its password, for messages."""
    try:
        params = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "the --index database"
    host, port, db = params.get("host", "localhost"), params.get("port", 5432), params.get("dbname")
    return f"postgresql://{host}:{port}/{db or ''}"


class _SteadyReconnects(psycopg_pool.base.AttemptWithBackoff):
    """The pool's reconnection attempts, every RECONNECT_EVERY s instead of doubling from
    1 s: with doubling, a 5 s outage kept the pool away for up to 8 s more after it ended."""

    INITIAL_DELAY = RECONNECT_EVERY
    DELAY_BACKOFF = 1.0


psycopg_pool.pool.AttemptWithBackoff = _SteadyReconnects  # type: ignore[attr-defined]


class Index:
    """A pool of connections to one database; safe to share between threads."""

    def __init__(self, dsn: str, connections: int) -> None:
        """Use Index.connect."""
        self.where = describe(dsn)
        self._pool: psycopg_pool.ConnectionPool[psycopg.Connection[Row]]
        self._pool = psycopg_pool.ConnectionPool(
            dsn,
            min_size=1,
            max_size=connections,
            open=False,
            timeout=POOL_TIMEOUT,
            check=psycopg_pool.ConnectionPool.check_connection,
            kwargs={
                "connect_timeout": CONNECT_TIMEOUT,
                "options": f"-c statement_timeout={STATEMENT_TIMEOUT_MS}",
            },
            name="arkfs-index",
        )

    @classmethod
    def connect(cls, dsn: str, connections: int = 16) -> "Index":
        """Connect to the database at dsn, whatever it holds: no DDL runs (a role with only
        read and write rights connects); check_schema and identity.verify say if it fits."""
        if not dsn.startswith(("postgresql://", "postgres://")):
            raise StoreError(f"--index must be a postgresql:// URL, got {describe(dsn)}")
        index = cls(dsn, connections)
        try:
            with index._errors("open the index"):
                # One plain connection first: a missing database or an unknown role is
                # said at once, where the pool would retry it until POOL_TIMEOUT.
                psycopg.connect(dsn, connect_timeout=CONNECT_TIMEOUT).close()
                index._pool.open(wait=True, timeout=POOL_TIMEOUT)
        except BaseException:
            index.close()
            raise
        return index

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close(timeout=POOL_TIMEOUT)

    @contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        """psycopg's errors as store errors that say what to do."""
        try:
            yield
        except psycopg_pool.PoolTimeout:
            raise StoreError(
                f"{what}: no connection to the index database {self.where} within "
                f"{POOL_TIMEOUT:g} s; check --index and that PostgreSQL is up"
            ) from None
        except psycopg.OperationalError as exc:
            raise StoreError(f"{what}: {_refusal(self.where, exc)}") from None
        except psycopg.errors.QueryCanceled as exc:
            raise StoreError(
                f"{what}: the index database {self.where} failed "
                f"({_first_line(exc)}); check that PostgreSQL is up"
            ) from None
        except psycopg.errors.DataCorrupted as exc:
            raise StoreCorrupt(
                f"{what}: the index database {self.where} is damaged ({_first_line(exc)}); "
                "restore it from a backup"
            ) from None
        except psycopg.errors.ForeignKeyViolation as exc:  # raced by `arkfs store gc`
            raise Rejected(
                f"{what}: a row names a xorb or shard that is no longer stored, as a "
                f"concurrent `arkfs store gc` leaves it ({_first_line(exc)}); upload it again"
            ) from None
        except psycopg.DatabaseError as exc:
            raise StoreError(
                f"{what}: the index database {self.where} refused ({_first_line(exc)})"
            ) from None

    def ready(self) -> None:
        """The database answers a trivial query."""
        with self.transaction("check the index") as cur:
            cur.execute("SELECT 1")

    @contextmanager
    def transaction(self, what: str) -> Iterator[Cursor]:
        """One transaction: committed if the block ends normally, rolled back otherwise."""
        with self._errors(what), self._pool.connection() as conn, conn.cursor() as cur:
            yield cur

    def schema_version(self) -> int:
        """The schema version the database holds; 0 if it holds no arkfs schema."""
        with self.transaction("read the schema version") as cur:
            return _schema_version(cur)

    def check_schema(self) -> None:
        """WrongStore unless the database holds this arkfs's schema version."""
        problem = _schema_problem(self.where, self.schema_version())
        if problem:
            raise WrongStore(problem)

    def migrate(self, dry_run: bool = False) -> list[str]:
        """Create or update the schema to SCHEMA_VERSION; one line per step (done, or with
        dry_run only said). WrongStore for a newer schema than this arkfs knows."""
        with self.transaction("update the index schema") as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            found = _schema_version(cur)
            if found > SCHEMA_VERSION:
                raise WrongStore(_schema_problem(self.where, found) or "")
            steps = _steps(found)
            if dry_run:
                return [f"would {step}" for step, _ in steps]
            for _, statements in steps:
                for statement in statements:
                    cur.execute(statement, (list(COUNTERS),) if "%s" in statement else None)
            if found == 0:
                cur.execute("INSERT INTO schema_version VALUES (%s)", (SCHEMA_VERSION,))
            elif steps:
                cur.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION,))
        return [step for step, _ in steps]

    def identity(self) -> tuple[str, str] | None:
        """(store id, prefix) of the store this database indexes; None if not recorded."""
        with self.transaction("read the store identity") as cur:
            cur.execute("SELECT store_id, prefix FROM store_identity")
            row = cur.fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def set_identity(self, store_id: str, prefix: str) -> None:
        """Record the store this database indexes (once: `store init`)."""
        with self.transaction("record the store identity") as cur:
            cur.execute("LOCK TABLE store_identity")
            cur.execute("SELECT 1 FROM store_identity")
            if cur.fetchone() is None:
                cur.execute("INSERT INTO store_identity VALUES (%s, %s)", (store_id, prefix))

    def has_xorbs(self) -> bool:
        """Does the index name any xorb?"""
        with self.transaction("look for xorbs") as cur:
            cur.execute("SELECT EXISTS (SELECT 1 FROM xorbs)")
            row = cur.fetchone()
        return bool(row and row[0])


def _schema_version(cur: Cursor) -> int:
    """The schema version in the database of cur; 0 if it holds no arkfs schema."""
    cur.execute("SELECT to_regclass('schema_version') IS NOT NULL")
    row = cur.fetchone()
    if row is None or not row[0]:
        return 0
    cur.execute("SELECT version FROM schema_version")
    row = cur.fetchone()
    return 0 if row is None else int(row[0])


def _schema_problem(where: str, found: int) -> str | None:
    """Why this arkfs cannot use an index of schema version found; None if it can."""
    if found == 0:
        return (
            f"the index database {where} holds no arkfs store: run `arkfs store init` "
            "for a new store, or check --index"
        )
    if found < SCHEMA_VERSION:
        return (
            f"the index database {where} has schema version {found}, this arkfs needs "
            f"{SCHEMA_VERSION}: run `arkfs store migrate` (with --dry-run to see how)"
        )
    if found > SCHEMA_VERSION:
        return (
            f"the index database {where} has schema version {found}; this arkfs reads "
            f"version {SCHEMA_VERSION}: use the arkfs release that wrote it"
        )
    return None


def _steps(found: int) -> list[tuple[str, list[str]]]:
    """The schema changes from version found to SCHEMA_VERSION: (what, statements) each."""
    steps: list[tuple[str, list[str]]] = []
    if found < 1:
        steps.append(
            (
                "create the tables xorbs, shards, files, terms, dedup, versions and counters "
                "(schema version 1)",
                [*_SCHEMA, *_counter_statements()],
            )
        )
    if found < 2:
        steps.append(("create the table store_identity (schema version 2)", [_IDENTITY_TABLE]))
    return steps


def _refusal(where: str, exc: psycopg.OperationalError) -> str:
    """What a failed connection or statement says, with what to do about it: PostgreSQL's
    own refusals (no such database or role, a wrong password) name what to fix."""
    line = _first_line(exc)
    reason = line.rpartition("FATAL:")[2].strip() or line
    if "does not exist" in reason and reason.startswith("database"):
        return f"{reason} at {where}: create it (createdb), or correct --index"
    if "does not exist" in reason and reason.startswith("role"):
        return f"{reason} at {where}: create it (createuser), or correct the user in --index"
    if "authentication failed" in reason or "no pg_hba.conf entry" in reason:
        return f"{reason} at {where}: check the user and password in --index"
    return f"the index database {where} failed ({line}); check that PostgreSQL is up"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
