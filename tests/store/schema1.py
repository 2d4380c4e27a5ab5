"""A store as the release with index schema 1 creates and binds it, to migrate from.

The statements are copied from that release's arkfs/store/local.py: they are the old
format, which the migration must read, so they must not follow the current code.
"""

import sqlite3
from collections.abc import Iterable
from contextlib import closing
from pathlib import Path

SCHEMA_1 = (
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
    """CREATE TABLE bindings (
        ark TEXT PRIMARY KEY,
        manifest BLOB NOT NULL,
        erc TEXT NOT NULL,
        updated REAL NOT NULL
    ) WITHOUT ROWID""",
)
BIND_1 = (  # that release's bind: a later binding replaced the earlier one
    "INSERT INTO bindings (ark, manifest, erc, updated) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (ark) DO UPDATE SET manifest = excluded.manifest, "
    "erc = excluded.erc, updated = excluded.updated"
)


def schema1_store(root: Path, bindings: Iterable[tuple[str, bytes, str, float]]) -> None:
    """Create a schema-1 store at root, then bind (ark, manifest, erc, updated) in order."""
    root.mkdir(parents=True)
    with closing(sqlite3.connect(root / "index.sqlite", isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=FULL")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("BEGIN IMMEDIATE")
        for statement in SCHEMA_1:
            db.execute(statement)
        db.execute("INSERT INTO schema_version VALUES (?)", (1,))
        db.execute("COMMIT")
        for binding in bindings:
            db.execute("BEGIN IMMEDIATE")
            db.execute(BIND_1, binding)
            db.execute("COMMIT")
    xorbs = root / "xorbs"
    for directory in [root / "shards", xorbs, *(xorbs / f"{i:02x}" for i in range(256))]:
        directory.mkdir()
