"""Running the installed `arkfs` console script as a user would."""

import subprocess
import sys
from pathlib import Path

ARKFS = str(Path(sys.executable).parent / "arkfs")


def run_arkfs(
    *args: str, input: bytes | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run `arkfs ARGS...`; capture text stdout and stderr."""
    return subprocess.run(
        [ARKFS, *args],
        input=input.decode() if input is not None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
