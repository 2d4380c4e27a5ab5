"""`arkfs store check`: find (and with --repair, clear) damage in a store; `arkfs store gc`:
delete what no version references. A store is a directory, or a bucket with its
PostgreSQL index."""

import argparse
import math
import time
from pathlib import Path

from arkfs.cli.common import EXIT_FAILURE, EXIT_OK, BadInput
from arkfs.cli.store_options import add_store_options, is_s3, open_store, set_up_scaled
from arkfs.util.sizes import human


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
    i = ssub.add_parser(
        "init",
        help="create a store, or mark an existing one, so that `serve` knows it",
        description="Create the index schema and record one identity (a store id) in both "
        "the bucket (PREFIX/arkfs-store.json) and the index database: `arkfs serve` refuses "
        "a bucket, prefix and database that do not carry the same one. Safe to repeat. "
        "A directory store is created if missing.",
        epilog="Examples:\n  arkfs store init s3://archive/arkfs --index postgresql://arkfs@db/arkfs"
        "\n  arkfs store init /srv/arkstore",
    )
    i.add_argument(
        "store", metavar="DIR|s3://BUCKET[/PREFIX]", help="the store directory, or a bucket"
    )
    add_store_options(i)
    i.set_defaults(func=run_init)
    m = ssub.add_parser(
        "migrate",
        help="update the store's index schema to this arkfs's version",
        description="Create or update the tables of the index database (the only DDL arkfs "
        "runs: `serve` needs only read and write rights) and print each step. A directory "
        "store is migrated when opened.",
        epilog="Example:\n  arkfs store migrate s3://archive/arkfs "
        "--index postgresql://owner@db/arkfs --dry-run",
    )
    m.add_argument(
        "store", metavar="DIR|s3://BUCKET[/PREFIX]", help="the store directory, or a bucket"
    )
    add_store_options(m)
    m.add_argument("--dry-run", action="store_true", help="only say what would change")
    m.set_defaults(func=run_migrate)
    g = ssub.add_parser(
        "gc",
        help="delete the xorbs and shards no version of any ARK references",
        description="Delete every xorb and shard that no file of any version of any ARK "
        "needs, and report the bytes freed. What was written within the grace period is "
        "kept: a publish in progress uploads before it binds. Every version still reads "
        "afterwards, and `store check` stays clean. Safe while the server runs.",
        epilog="Examples:\n  arkfs store gc /srv/arkstore --dry-run\n"
        "  arkfs store gc s3://archive/arkfs --index postgresql://arkfs@db/arkfs",
    )
    g.add_argument(
        "store",
        metavar="DIR|s3://BUCKET[/PREFIX]",
        help="the store directory, or a bucket with --index",
    )
    add_store_options(g)
    g.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    g.add_argument(
        "--grace",
        type=float,
        metavar="SECONDS",
        help="keep what was written this recently (default: a day)",
    )
    g.set_defaults(func=run_gc)


def _existing(store: str) -> None:
    """BadInput unless store is a bucket or a store directory."""
    if not is_s3(store) and not (Path(store) / "index.sqlite").is_file():
        raise BadInput(f"{store} is not an arkfs store (no index.sqlite)")


def run_init(args: argparse.Namespace) -> int:
    """Initialise the store; print what was done."""
    if not is_s3(args.store):
        open_store(args, args.store, create=True).close()
        print(f"{args.store}: a directory store, ready")
        return EXIT_OK
    for line in set_up_scaled(args, args.store, None):
        print(f"{args.store}: {line}")
    return EXIT_OK


def run_migrate(args: argparse.Namespace) -> int:
    """Migrate the store's index schema; print each step."""
    if not is_s3(args.store):
        _existing(args.store)
        open_store(args, args.store, create=False).close()  # migrates an older index
        print(f"{args.store}: a directory store, at the current schema")
        return EXIT_OK
    steps = set_up_scaled(args, args.store, args.dry_run)
    for line in steps:
        print(f"{args.store}: {line}")
    if not steps:
        print(f"{args.store}: the index schema is current; nothing to do")
    return EXIT_OK


def run_gc(args: argparse.Namespace) -> int:
    """Collect the store's garbage; print what was (or would be) deleted and freed."""
    from arkfs.store.gc import DEFAULT_GRACE, live_files

    if args.grace is None:
        args.grace = DEFAULT_GRACE
    if not 0 <= args.grace < math.inf:
        raise BadInput(f"--grace takes a number of seconds >= 0, got {args.grace}")
    _existing(args.store)
    store = open_store(args, args.store, create=False)
    try:
        report = store.collect(live_files(store), time.time() - args.grace, args.dry_run)
    finally:
        store.close()
    verb = "would delete" if args.dry_run else "deleted"
    print(
        f"{args.store}: {verb} {report.xorbs} xorbs ({human(report.xorb_bytes)}) and "
        f"{report.shards} shards ({human(report.shard_bytes)}): "
        f"{human(report.freed)} {'to free' if args.dry_run else 'freed'} ({report.freed} bytes); "
        f"{report.young} unreferenced kept for the grace period"
    )
    return EXIT_OK


def run_check(args: argparse.Namespace) -> int:
    """Check the store; print what was found and a summary line."""
    from arkfs.store.base import UNINDEXED
    from arkfs.store.errors import StoreError

    if args.sample is not None and args.sample < 1:
        raise BadInput(f"--sample takes a positive number of xorbs, got {args.sample}")
    _existing(args.store)
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
    damaged = [p for p in problems if not p.startswith(("removed ", UNINDEXED))]
    print(
        f"{args.store}: {stats.xorbs} xorbs, {stats.shards} shards, {stats.files} files, "
        f"{stats.bindings} ARKs: {'no damage found' if not damaged else f'{len(damaged)} problems'}"
    )
    return EXIT_FAILURE if damaged else EXIT_OK
