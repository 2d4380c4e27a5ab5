"""The stores: xorbs, shards, file reconstructions, dedup chunks and ARK bindings.

- errors: StoreError and its kinds (NotFound, Rejected, OutOfRange, StoreCorrupt).
- base: the Store interface, its records, and the consistency rules every backend applies.
- local: LocalStore, a directory of xorb and shard files with a SQLite index.
- scaled: ScaledStore, xorbs and shards in an S3 bucket (bucket), the index in PostgreSQL
  (postgres).
- files: verified file bytes rebuilt from a store.
- shards: a shard checked against the stored xorbs (intake and `arkfs store check`).

Crash-safe file writes (atomic) live in arkfs.util.
"""
