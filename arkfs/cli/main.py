"""Entry point: parse the command line and run one subcommand with the exit code contract
(EXIT_CODES, shown by `arkfs --help`): every failure is one line on stderr."""

import argparse
import os
import sys
from collections.abc import Sequence

from arkfs import __version__
from arkfs.backend.base import BackendError
from arkfs.cli import (
    ark,
    completion,
    config,
    export,
    get,
    mount,
    publish,
    resolve,
    serve,
    store,
    versions,
    withdraw,
    xet,
)
from arkfs.cli.common import (
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    BadInput,
    Interrupted,
    first_error,
)
from arkfs.cli.helptext import Parser
from arkfs.cli.mount_form import is_mount_form, mount_argv
from arkfs.publish.publisher import PublishError
from arkfs.store.errors import StoreError

COMMANDS = (
    xet, ark, publish, versions, withdraw, export, serve, store, mount, get, resolve, config,
    completion,
)  # fmt: skip
FAILURES = (BackendError, PublishError, StoreError, OSError)  # not the input: exit 1, with why


def build_parser() -> argparse.ArgumentParser:
    """The whole `arkfs` parser, with one subparser per command module."""
    parser = Parser(
        prog="arkfs",
        description="Browse and read persistent archives: ARK-named directories whose files "
        "live in XET content-addressed storage.",
        epilog="Run `arkfs COMMAND --help` for the options of each command. "
        "mount(8) may run arkfs as `arkfs SOURCE MOUNTPOINT -o OPTIONS` (SOURCE: a server URL, "
        "store:/path, or arkfs).\n\nExit codes (every command):\n" + EXIT_CODES,
    )
    parser.add_argument("--version", action="version", version=f"arkfs {__version__}")
    parser.add_argument(
        "--ca-file",
        metavar="PEM",
        help="trust the certificate authorities in PEM for https (as SSL_CERT_FILE does): "
        "a server behind a proxy with a private CA",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        module.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `arkfs` with argv (or as mount(8)'s helper, `arkfs SOURCE MOUNTPOINT -o ...`);
    return the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if is_mount_form(argv, _command_names(parser), sys.argv[0]):
            argv = mount_argv(argv)
    except BadInput as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = parser.parse_args(argv)
    try:
        if args.ca_file is not None:
            _trust(args.ca_file)
        return _run_command(args)
    except BadInput as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except FAILURES as exc:
        print(f"arkfs: {_reason(exc)}", file=sys.stderr)
        return EXIT_FAILURE
    except Interrupted as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print("arkfs: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _trust(ca_file: str) -> None:
    """Make every https client of this process (httpx, hf_xet) trust ca_file's CAs."""
    if not os.path.isfile(ca_file):
        raise BadInput(f"--ca-file {ca_file}: no such file")
    os.environ["SSL_CERT_FILE"] = os.path.abspath(ca_file)


def _command_names(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommand names (and aliases) of parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return list(action.choices)
    return []


def _run_command(args: argparse.Namespace) -> int:
    """Run the command; an error that trio nurseries wrapped in exception groups comes out
    bare, so the handlers above see it."""
    try:
        return int(args.func(args) or 0)
    except BaseExceptionGroup as group:
        raise first_error(group) from None


def _reason(exc: Exception) -> str:
    """What went wrong, in one line: an OSError as its file and reason, without the errno."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


if __name__ == "__main__":
    sys.exit(main())
