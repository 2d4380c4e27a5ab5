"""`arkfs store check`: find (and with --repair, clear) damage in a store: a directory, or a
bucket with its PostgreSQL index."""

import argparse
from pathlib import Path

from arkfs.cli.common import EXIT_FAILURE, EXIT_OK, BadInput
from arkfs.cli.stores import add_store_options, is_s3, open_store
from arkfs.store.errors import StoreError


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs store`."""
    p = sub.add_parser(
        "store",
        help="inspect and check a store directory",
        description="Tools for the store `arkfs serve` serves: a directory, or an s3:// "
        "bucket with its PostgreSQL index.",
    )
    ssub = p.add_subparsers(dest="store_command", metavar="SUBCOMMAND", required=True)
    c = ssub.add_parser(
        "check",
        help="verify every xorb, shard and index row; print one line per problem",
        description="Re-hash every xorb, check shards and the index, and report damage. "
        "Exit 0 when the store is sound, 1 when damage was found.",
        epilog="Examples:\n  arkfs store check /srv/arkstore --sample 100\n"
        "  arkfs store check s3://archive/arkfs --index postgresql://arkfs@db/arkfs --repair",
    )
    c.add_argument(
        "store",
        metavar="DIR|s3://BUCKET[/PREFIX]",
        help="the store directory, or a bucket with --index",
    )
    add_store_options(c)
    c.add_argument(
        "--sample",
        type=int,
        metavar="N",
        help="hash N xorbs (and, in a bucket, N shards) chosen at random, not all; "
        "every index row is still followed",
    )
    c.add_argument(
        "--repair", action="store_true", help="remove leftovers of interrupted writes (only those)"
    )
    c.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Check the store; print what was found and a summary line."""
    if args.sample is not None and args.sample < 1:
        raise BadInput(f"--sample takes a positive number of xorbs, got {args.sample}")
    if not is_s3(args.store) and not (Path(args.store) / "index.sqlite").is_file():
        raise BadInput(f"{args.store} is not an arkfs store (no index.sqlite)")
    try:
        store = open_store(args, args.store, create=False)
        try:
            problems = store.check(repair=args.repair, sample=args.sample)
            stats = store.stats()
        finally:
            store.close()
    except StoreError as exc:
        print(f"arkfs: {exc}")
        return EXIT_FAILURE
    for line in problems:
        print(line)
    damaged = [p for p in problems if not p.startswith("removed ")]
    print(
        f"{args.store}: {stats.xorbs} xorbs, {stats.shards} shards, {stats.files} files, "
        f"{stats.bindings} ARKs: {'no damage found' if not damaged else f'{len(damaged)} problems'}"
    )
    return EXIT_FAILURE if damaged else EXIT_OK
