"""Which store `serve` and `store check` open: a directory, or s3://BUCKET[/PREFIX] with a
PostgreSQL index (--s3-endpoint, --index)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from arkfs.cli.common import BadInput
from arkfs.cli.helptext import Options
from arkfs.store.errors import WrongStore

if TYPE_CHECKING:  # imported when a store is opened: --help starts at once
    from arkfs.store.base import Store

S3_SCHEME = "s3://"
S3_WORKERS = 16  # worker threads for a scaled store: its calls wait on the network
LOCAL_WORKERS = 4  # worker threads for a directory: its calls wait on one disk


def add_store_options(p: Options) -> None:
    """--s3-endpoint and --index, for an s3:// store (the caller adds the store itself)."""
    p.add_argument(
        "--s3-endpoint",
        metavar="URL",
        help="endpoint of an S3-compatible object store for an s3:// store (default: AWS); "
        "credentials come from the standard AWS variables and files",
    )
    p.add_argument(
        "--s3-public-endpoint",
        metavar="URL",
        help="the S3 endpoint as readers reach it, for the pre-signed xorb URLs `serve` hands "
        "out (default: --s3-endpoint)",
    )
    p.add_argument(
        "--index",
        metavar="postgresql://...",
        help="PostgreSQL database that indexes an s3:// store (required with one)",
    )


def is_s3(location: str) -> bool:
    """Does location name a bucket rather than a directory?"""
    return location.startswith(S3_SCHEME)


def workers(location: str) -> int:
    """How many worker threads serve calls into the store at location."""
    return S3_WORKERS if is_s3(location) else LOCAL_WORKERS


def open_store(args: argparse.Namespace, location: str, create: bool = True) -> Store:
    """The store at location (a directory, or s3://BUCKET[/PREFIX] with args.index);
    BadInput for options that do not fit, StoreError if it cannot be opened."""
    if not is_s3(location):
        from arkfs.store.local import LocalStore

        if args.index or args.s3_endpoint or args.s3_public_endpoint:
            raise BadInput(
                "--index, --s3-endpoint and --s3-public-endpoint go with an "
                "s3://BUCKET[/PREFIX] store only"
            )
        try:
            return LocalStore.open(Path(location), create=create)
        except OSError as exc:
            verb = "create" if create else "open"
            raise BadInput(f"cannot {verb} the store {location}: {exc.strerror or exc}") from None
    if not args.index:
        raise BadInput(f"{location} needs --index postgresql://... for its index database")
    _need_s3_extra()
    from arkfs.store.scaled import ScaledStore

    try:
        return ScaledStore.open(
            location,
            args.s3_endpoint,
            args.index,
            connections=S3_WORKERS,
            public_endpoint=args.s3_public_endpoint,
        )
    except WrongStore as exc:  # the options name parts of different stores: the input's fault
        raise BadInput(str(exc)) from None


def _need_s3_extra() -> None:
    """BadInput unless the s3 extra (boto3, psycopg) is installed."""
    try:  # the s3 extra is optional: a directory store needs neither client
        import boto3  # noqa: F401
        import psycopg  # noqa: F401
    except ImportError as exc:
        raise BadInput(
            f"an s3:// store needs the s3 extra ({exc.name} is missing): pip install 'arkfs[s3]'"
        ) from None


def set_up_scaled(args: argparse.Namespace, location: str, dry_run: bool | None) -> list[str]:
    """Create or migrate (dry_run not None) the index schema of the scaled store at location
    and, to create, record its identity; one line per step. BadInput where the parts do not
    belong together."""
    if not args.index:
        raise BadInput(f"{location} needs --index postgresql://... for its index database")
    _need_s3_extra()
    from arkfs.store import identity
    from arkfs.store.bucket import Bucket
    from arkfs.store.postgres import Index

    bucket = Bucket.open(location, args.s3_endpoint)
    index = Index.connect(args.index)
    try:
        if dry_run is None:
            return identity.initialise(bucket, index)
        return identity.migrate(bucket, index, dry_run)
    except WrongStore as exc:
        raise BadInput(str(exc)) from None
    finally:
        index.close()
