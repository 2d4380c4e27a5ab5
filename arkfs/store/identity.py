"""The identity of a scaled store: a marker naming the store (id, schema version, prefix),
written by `arkfs store init` both in the bucket (PREFIX/arkfs-store.json) and in the index
(store_identity), and compared at every open, so that a bucket, a prefix and a database that
do not belong together refuse to start instead of answering 404 or 500."""

import json
import uuid
from dataclasses import dataclass

from arkfs.store.bucket import Bucket
from arkfs.store.errors import NotFound, StoreCorrupt, WrongStore
from arkfs.store.postgres import SCHEMA_VERSION, Index

MARKER = "arkfs-store.json"  # the bucket's marker, under the store's prefix
XORBS = "xorbs"  # the kind of object whose presence says the bucket holds a store


@dataclass(frozen=True)
class Identity:
    """Which store a bucket or an index belongs to, and the prefix it was made at."""

    store_id: str
    prefix: str


def _marker_key(bucket: Bucket) -> str:
    return f"{bucket.prefix}{MARKER}"


def bucket_identity(bucket: Bucket) -> Identity | None:
    """The identity in the bucket's marker at its prefix; None if there is none."""
    try:
        data = bucket.get(_marker_key(bucket))
    except NotFound:
        return None
    try:
        fields = json.loads(data)
        return Identity(str(fields["store_id"]), str(fields["prefix"]))
    except (ValueError, KeyError, TypeError):
        raise StoreCorrupt(
            f"the marker {_marker_key(bucket)} in {bucket.where()} is damaged; "
            "restore it from a backup"
        ) from None


def index_identity(index: Index) -> Identity | None:
    """The identity recorded in the index; None if there is none."""
    found = index.identity()
    return None if found is None else Identity(*found)


def mismatch(
    in_bucket: Identity | None, in_index: Identity | None, bucket: str, index: str
) -> str | None:
    """Why a bucket (with its marker) and an index (with its row) are not one store; None
    if they are."""
    if in_bucket is None and in_index is None:
        return f"the store {bucket} indexed in {index} is not initialised: run `arkfs store init`"
    if in_index is None:
        return (
            f"the index database {index} is empty, but {bucket} holds the store "
            f"{in_bucket.store_id if in_bucket else ''}: correct --index to that store's database"
        )
    if in_bucket is None:
        return (
            f"there is no store at {bucket}; the index database {index} belongs to the store "
            f"at prefix '{in_index.prefix}': check the prefix of the s3:// location"
        )
    if in_bucket.store_id != in_index.store_id:
        return (
            f"the index database {index} belongs to the store {in_index.store_id}, but "
            f"{bucket} is the store {in_bucket.store_id}: correct --index or the s3:// location"
        )
    return None


def verify(bucket: Bucket, index: Index) -> None:
    """WrongStore unless bucket and index are one store initialised for this arkfs's schema:
    an index without any schema is compared as one without identity, so that the reply says
    which database the bucket wants."""
    if index.schema_version() == 0:
        in_index = None
    else:
        index.check_schema()
        in_index = index_identity(index)
    problem = mismatch(bucket_identity(bucket), in_index, bucket.where(), index.where)
    if problem:
        raise WrongStore(problem)


def _write_marker(bucket: Bucket, store_id: str) -> None:
    marker = {"store_id": store_id, "schema": SCHEMA_VERSION, "prefix": bucket.prefix}
    bucket.put(_marker_key(bucket), json.dumps(marker, indent=1).encode() + b"\n")


def migrate(bucket: Bucket, index: Index, dry_run: bool = False) -> list[str]:
    """Update the index schema (and the schema version in the bucket's marker); one line
    per step, only said with dry_run."""
    done = index.migrate(dry_run)
    found = bucket_identity(bucket)
    if done and found is not None and not dry_run:
        _write_marker(bucket, found.store_id)
    return done


def initialise(bucket: Bucket, index: Index) -> list[str]:
    """Create or update the index schema and record one identity in both bucket and index;
    one line per thing done. An existing store without identity (made before markers) is
    adopted when its bucket and index agree on holding xorbs; WrongStore otherwise."""
    done = index.migrate()
    in_bucket, in_index = bucket_identity(bucket), index_identity(index)
    if in_bucket is not None and in_bucket == in_index:
        return [*done, f"{bucket.where()} is already the store {in_bucket.store_id}"]
    resumable = in_bucket is None and in_index is not None and in_index.prefix == bucket.prefix
    if (in_bucket is not None or in_index is not None) and not resumable:
        verify(bucket, index)  # raises: they name different stores
        raise WrongStore(f"{bucket.where()} and {index.where} disagree on the store's identity")
    if in_index is None:
        if bucket.holds(XORBS) and not index.has_xorbs():
            raise WrongStore(
                f"{bucket.where()} holds xorbs but the index database {index.where} is "
                "empty: correct --index to that store's database"
            )
        if index.has_xorbs() and not bucket.holds(XORBS):
            raise WrongStore(
                f"the index database {index.where} names xorbs but {bucket.where()} holds "
                "none: check the prefix of the s3:// location"
            )
        in_index = Identity(str(uuid.uuid4()), bucket.prefix)
        index.set_identity(in_index.store_id, in_index.prefix)
        in_index = index_identity(index)  # a concurrent init may have recorded its own
        assert in_index is not None
    _write_marker(bucket, in_index.store_id)
    made = f"initialised {bucket.where()} and {index.where} as the store {in_index.store_id}"
    return [*done, made]
