"""The log level options the daemons share: -v and --log-level."""

import argparse
import logging

LEVELS = ("debug", "info", "warning", "error")


def add_log_level_options(p: argparse.ArgumentParser) -> None:
    """-v (debug) and --log-level LEVEL."""
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log debug lines too (as --log-level debug)",
    )
    p.add_argument("--log-level", choices=LEVELS, help="least severe level logged (default info)")


def log_level(args: argparse.Namespace) -> int:
    """The logging level args ask for: --log-level, else debug with -v, else info."""
    if args.log_level is not None:
        return int(getattr(logging, args.log_level.upper()))
    return logging.DEBUG if args.verbose else logging.INFO
