"""`arkfs resolve ARK`: how an ARK resolves, hop by hop, as `dig +trace` shows a name."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

from arkfs.cli.common import BadInput
from arkfs.cli.resolver_options import add_resolver_options, discovery_from, resolver_config
from arkfs.util import paths

if TYPE_CHECKING:  # imported when the command runs: its --help starts at once
    from arkfs.resolver.discover import Trace


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register `arkfs resolve`."""
    p = sub.add_parser(
        "resolve",
        help="show how an ARK resolves: registry record, redirect hops, responder, ?info",
        description="Resolve ARK as the mount does for an ARK no configured server binds, "
        "and print the trace: the registry record used (a NAAN's or a shoulder's) or the "
        "fallback resolver, every redirect hop with its URL and status, the responder, the "
        "service path its /.well-known/ark announces, and its ?info record. For debugging, "
        "as `dig +trace` is.",
        epilog="Registries and tokens come from --registry and the config file, as for "
        "`arkfs mount`.\n\nExample:\n"
        "  arkfs resolve ark:12345/x6np1wh8k --registry naan_records.json",
    )
    p.add_argument("ark", metavar="ARK", help="an ARK, ark:NAAN/Name[...]")
    p.add_argument("--json", action="store_true", help="print the trace as JSON")
    add_resolver_options(p)
    p.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="where registry copies are kept (default: $XDG_CACHE_HOME/arkfs or ~/.cache/arkfs)",
    )
    p.set_defaults(func=run_resolve)


def run_resolve(args: argparse.Namespace) -> int:
    """Resolve and print; a broken chain fails with one line (exit 1)."""
    import trio

    from arkfs.ark.errors import ArkError
    from arkfs.ark.normalization import parse
    from arkfs.net.bearer import OriginTokens
    from arkfs.resolver.discover import Resolver

    try:
        ark = parse(args.ark)
    except ArkError as exc:
        raise BadInput(str(exc)) from None
    config = resolver_config(args)
    discovery = discovery_from(args, config)
    found = discovery.sources(config, always=True)
    assert found is not None
    registries, fallback = found
    cache_dir = Path(os.path.abspath((args.cache_dir or paths.cache_dir()).expanduser()))

    async def main() -> Trace:
        tokens = OriginTokens(config.tokens)
        resolver = Resolver(
            list(registries),
            fallback,
            cache_dir,
            tokens,
            allow_private=discovery.allows_private(config),
        )
        try:
            return await resolver.resolve(ark, info=True)
        finally:
            await resolver.aclose()

    trace = trio.run(main)
    if args.json:
        print(json.dumps(trace.to_json(), indent=2))
    else:
        print("\n".join(trace.lines()))
    return 0
