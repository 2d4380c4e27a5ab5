"""The token a command sends to a server: --token, --token-file or $ARKFS_TOKEN.

A token given as --token is blanked from the process's own command line as soon as it is
read, so ps and /proc/PID/cmdline do not show it for the rest of the process's life.
"""

import argparse
import os
import sys
from pathlib import Path

from arkfs.cli.common import BadInput
from arkfs.cli.helptext import Options


def add_token_options(p: Options, what: str) -> None:
    """--token and --token-file (one or the other); what says what the token is for."""
    token = p.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        help=f"{what} (default: $ARKFS_TOKEN); arkfs hides it from the process list once "
        "it starts, but prefer --token-file or $ARKFS_TOKEN",
    )
    token.add_argument(
        "--token-file", type=Path, metavar="FILE", help="read the token from FILE's first line"
    )


def token_from(args: argparse.Namespace) -> str | None:
    """The token: --token (then hidden from the command line), --token-file or $ARKFS_TOKEN."""
    if args.token:
        if not hide_from_cmdline(args.token):
            print(
                "arkfs: warning: --token stays visible in the process list; use --token-file",
                file=sys.stderr,
            )
        return str(args.token)
    if args.token_file is None:
        return os.environ.get("ARKFS_TOKEN") or None
    try:
        lines = args.token_file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise BadInput(f"cannot read the token file {args.token_file}: {reason}") from None
    token = lines[0].strip() if lines else ""
    if not token:
        raise BadInput(
            f"the token file {args.token_file} is empty: put the token on its first line"
        )
    return token


def hide_from_cmdline(secret: str) -> bool:
    """Overwrite secret with '*' where /proc/PID/cmdline (and so ps) reads this process's
    command line, in this process and in any child it forks from now on; False if it could
    not. Python cannot hide the secret from the moment of exec until this call, nor from
    the shell's history or tools that read the command line in that window (audit logs).

    sys.argv is a copy; /proc/PID/cmdline reads the original argument area of the stack,
    between arg_start and arg_end (fields 48 and 49 of /proc/self/stat, Linux 3.5+), which
    the process may write.
    """
    encoded = os.fsencode(secret)
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[45]), int(fields[46])  # fields[0] is field 3, the state
    except (OSError, IndexError, ValueError):
        return False
    if not encoded or end <= start:
        return False
    import ctypes

    area = ctypes.string_at(start, end - start)
    at = area.find(encoded)
    while at >= 0:
        ctypes.memmove(start + at, b"*" * len(encoded), len(encoded))
        at = area.find(encoded, at + len(encoded))
    return True
