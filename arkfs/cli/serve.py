"""`arkfs serve`: the archive side, an ARK resolver and a XET CAS on one base URL."""

import argparse
import logging
import sys
from pathlib import Path

import trio

from arkfs.cli.common import BadInput
from arkfs.server.app import run_server
from arkfs.server.auth import Authorizer, TokensFileError
from arkfs.store.local import LocalStore


def add_parser(sub: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Register `arkfs serve`."""
    p = sub.add_parser(
        "serve",
        help="serve a store over HTTP: ARK resolver and XET CAS",
        description="Serve the XET CAS API (the one hf_xet speaks) over a store directory. "
        "Reads need a read token unless --open-read; writes always need a write token.",
        epilog="Example: arkfs serve --store ~/arkstore --port 8080 --open-read "
        "--tokens tokens.txt   (tokens.txt: one `TOKEN read|write` per line)",
    )
    p.add_argument("--store", type=Path, required=True, help="store directory (created if missing)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8080, help="port (default 8080; 0 picks a free one)")
    p.add_argument("--open-read", action="store_true", help="let anyone read without a token")
    p.add_argument("--tokens", type=Path, help="file of `TOKEN SCOPE` lines (scope read or write)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Open the store and serve until interrupted."""
    if args.tokens is not None and not args.tokens.is_file():
        raise BadInput(f"tokens file {args.tokens} does not exist")
    if args.tokens is None and not args.open_read:
        print(
            "arkfs: no --tokens and no --open-read: every request will be refused", file=sys.stderr
        )
    try:
        auth = Authorizer.from_file(args.tokens, args.open_read)
    except TokensFileError as exc:
        raise BadInput(str(exc)) from None
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    store = LocalStore.open(args.store)

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            binds = await nursery.start(run_server, store, auth, args.host, args.port)
            print(f"arkfs: serving {args.store} on {binds[0]}", flush=True)

    trio.run(main)
    return 0
