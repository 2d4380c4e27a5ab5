"""Entry point: parse the command line and run one subcommand with the exit code contract.

Exit codes: 0 success, 2 bad input or usage (one line on stderr saying what is wrong),
1 any other failure.
"""

import argparse
import sys
from collections.abc import Sequence

from arkfs import __version__
from arkfs.cli import ark, mount, publish, serve, store, versions, xet
from arkfs.cli.common import EXIT_FAILURE, EXIT_USAGE, BadInput

COMMANDS = (xet, ark, publish, versions, serve, store, mount)


def build_parser() -> argparse.ArgumentParser:
    """The whole `arkfs` parser, with one subparser per command module."""
    parser = argparse.ArgumentParser(
        prog="arkfs",
        description="Browse and read persistent archives: ARK-named directories whose files "
        "live in XET content-addressed storage.",
        epilog="Run `arkfs COMMAND --help` for the options of each command.",
    )
    parser.add_argument("--version", action="version", version=f"arkfs {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `arkfs` with argv; return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BadInput as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("arkfs: interrupted", file=sys.stderr)
        return EXIT_FAILURE


if __name__ == "__main__":
    sys.exit(main())
