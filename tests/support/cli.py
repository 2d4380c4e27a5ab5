"""Running the installed `arkfs` console script as a user would."""

import subprocess
import sys
from pathlib import Path

ARKFS = str(Path(sys.executable).parent / "arkfs")


PRIVATE_COMMANDS = ("mount", "resolve")  # they take --allow-private


def run_arkfs(
    *args: str, input: bytes | None = None, timeout: float = 120, allow_private: bool = True
) -> subprocess.CompletedProcess[str]:
    """Run `arkfs ARGS...`; capture text stdout and stderr. `mount` and `resolve` get
    --allow-private unless allow_private is False: tests run their servers on loopback."""
    if allow_private and args and args[0] in PRIVATE_COMMANDS:
        args = (args[0], "--allow-private", *args[1:])
    return subprocess.run(
        [ARKFS, *args],
        input=input.decode() if input is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
