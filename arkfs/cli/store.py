"""`arkfs store check`: find (and with --repair, clear) damage in a store directory."""

import argparse
from pathlib import Path

from arkfs.cli.common import EXIT_FAILURE, EXIT_OK, BadInput
from arkfs.store.errors import StoreError
from arkfs.store.local import LocalStore


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs store`."""
    p = sub.add_parser("store", help="inspect and check a store directory")
    ssub = p.add_subparsers(dest="store_command", metavar="SUBCOMMAND", required=True)
    c = ssub.add_parser(
        "check",
        help="verify every xorb, shard and index row; print one line per problem",
        description="Re-hash every xorb, check shards and the SQLite index, and report damage. "
        "Exit 0 when the store is sound, 1 when damage was found.",
    )
    c.add_argument("store", type=Path, metavar="DIR", help="the store directory")
    c.add_argument(
        "--repair", action="store_true", help="remove leftovers of interrupted writes (only those)"
    )
    c.set_defaults(func=run_check)


def run_check(args: argparse.Namespace) -> int:
    """Check the store; print what was found and a summary line."""
    if not (args.store / "index.sqlite").is_file():
        raise BadInput(f"{args.store} is not an arkfs store (no index.sqlite)")
    try:
        with LocalStore.open(args.store, create=False) as store:
            problems = store.check(repair=args.repair)
            stats = store.stats()
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
