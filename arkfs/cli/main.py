"""Entry point: parse the command line and run one subcommand with the exit code contract
(EXIT_CODES, shown by `arkfs --help`): every failure is one line on stderr.

Only the chosen command's module is imported (`arkfs --version` and `arkfs --help` import
none), so the command line starts fast; the other commands are listed by their one-line
help from COMMANDS. Ctrl-C at any moment, while modules load too, exits 130 with one line.
"""

from __future__ import annotations

import os
import sys

from arkfs.cli.common import (
    EXIT_CODES,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    BadInput,
    Interrupted,
    first_error,
)

# httpx/__init__ imports its own command line (httpx._main: click, rich, pygments) when
# click is installed, as huggingface_hub makes it; on an ImportError it goes on without it.
# No command is imported before this line (arkfs.cli.common imports no httpx): a cold
# `arkfs get` imports 0.15-0.2 s less (python -X importtime, median of 5).
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]

if False:  # typing only: importing nothing more before main() runs keeps Ctrl-C short
    import argparse
    from collections.abc import Sequence

# Every command, in `arkfs --help` order: its name, the module that registers it (with the
# module's other commands), and its one-line help (tests/cli/test_cli_help.py checks these
# against the modules' own).
COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("xet", "xet", "hash files the way XET storage does (no server needed)"),
    ("ark", "ark", "parse, normalize, check and mint ARK identifiers"),
    ("publish", "publish", "upload a directory and bind an ARK to it"),
    ("bind", "publish", "bind an ARK to files already in the CAS"),
    ("versions", "versions", "list the versions of an archive and what each changed"),
    ("withdraw", "withdraw", "withdraw an archive: its content answers 410 Gone, its record stays"),
    ("export", "export", "write an archive as a BagIt bag or an OCFL object"),
    ("serve", "serve", "serve a store over HTTP: ARK resolver and XET CAS"),
    ("store", "store", "inspect and check a store directory"),
    ("mount", "mount", "mount the archives as a read-only filesystem"),
    ("umount", "mount", "unmount an arkfs mount"),
    ("stats", "mount", "show what a mount has read, fetched and cached"),
    ("get", "get", "download a file, directory or archive (@vN too), every byte verified"),
    (
        "resolve",
        "resolve",
        "show how an ARK resolves: registry record, redirect hops, responder, ?info",
    ),
    ("config", "config", "show the effective mount settings"),
    ("completion", "completion", "print a shell completion script"),
)
COMMAND_NAMES = [name for name, _, _ in COMMANDS]
VALUED_OPTIONS = ("--ca-file",)  # the options before the command that take a value

# The errors that are not the input's fault (exit 1, with why), by module: one that is not
# imported yet cannot have been raised, so it is not imported to check (OSError always is).
FAILURES = {
    "arkfs.backend.base": "BackendError",
    "arkfs.publish.publisher": "PublishError",
    "arkfs.store.errors": "StoreError",
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `arkfs` parser: every command module's subparsers, or with command only that
    command's module, the others listed by name and help."""
    from importlib import import_module

    from arkfs import __version__
    from arkfs.cli.helptext import Parser

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
    chosen = {module for name, module, _ in COMMANDS if command in (None, name)}
    for name, module, line in COMMANDS:
        if module not in chosen:
            sub.add_parser(name, help=line)
        elif name not in sub.choices:  # the module registers its other commands too
            import_module(f"arkfs.cli.{module}").add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `arkfs` with argv (or as mount(8)'s helper, `arkfs SOURCE MOUNTPOINT -o ...`);
    return the exit code."""
    try:
        code = _main(list(sys.argv[1:] if argv is None else argv))
    except KeyboardInterrupt:
        print("arkfs: interrupted", file=sys.stderr)
        code = EXIT_INTERRUPTED
    if code == EXIT_INTERRUPTED:
        _quiet_after_interrupt()
    return code


def _quiet_after_interrupt() -> None:
    """After Ctrl-C, a task trio was about to start (a coroutine made, never run) is
    collected at exit with a RuntimeWarning: expected then, and not a second line."""
    import warnings

    warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)


def _main(argv: list[str]) -> int:
    """main, with Ctrl-C left to it."""
    from arkfs.cli.mount_form import is_mount_form, mount_argv

    try:
        if is_mount_form(argv, COMMAND_NAMES, sys.argv[0]):
            argv = mount_argv(argv)
    except BadInput as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    args = build_parser(_chosen(argv)).parse_args(argv)
    try:
        if args.ca_file is not None:
            _trust(args.ca_file)
        return _run_command(args)
    except BadInput as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Interrupted as exc:
        print(f"arkfs: {exc}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if not _is_failure(exc):
            raise
        print(f"arkfs: {_reason(exc)}", file=sys.stderr)
        return EXIT_FAILURE


def _chosen(argv: Sequence[str]) -> str:
    """The command argv names (its first word that is no option nor an option's value), or
    "" for none."""
    words = iter(argv)
    for word in words:
        if word in VALUED_OPTIONS:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return ""


def _trust(ca_file: str) -> None:
    """Make every https client of this process (httpx, hf_xet) trust ca_file's CAs."""
    if not os.path.isfile(ca_file):
        raise BadInput(f"--ca-file {ca_file}: no such file")
    os.environ["SSL_CERT_FILE"] = os.path.abspath(ca_file)


def _is_failure(exc: Exception) -> bool:
    """Is exc one of FAILURES (or an OSError)?"""
    return isinstance(exc, OSError) or any(
        isinstance(exc, getattr(sys.modules[module], name))
        for module, name in FAILURES.items()
        if module in sys.modules
    )


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
