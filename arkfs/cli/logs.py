"""The log level options of the mount: -v and --log-level."""

from arkfs.cli.helptext import Options
from arkfs.mount.config import LOG_LEVELS


def add_log_level_options(p: Options) -> None:
    """-v (debug) and --log-level LEVEL."""
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log debug lines too (as --log-level debug)",
    )
    p.add_argument(
        "--log-level", choices=LOG_LEVELS, help="least severe level logged (default info)"
    )
