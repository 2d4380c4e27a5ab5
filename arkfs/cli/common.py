"""What every CLI command shares: exit codes, the bad-input error, hiding a secret argument."""

import ctypes
import os

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


class BadInput(Exception):
    """Input or usage the user must correct; the CLI prints it as one line and exits 2."""


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
    area = ctypes.string_at(start, end - start)
    at = area.find(encoded)
    while at >= 0:
        ctypes.memmove(start + at, b"*" * len(encoded), len(encoded))
        at = area.find(encoded, at + len(encoded))
    return True
