"""A command's own peak RSS, for the tests and the bench alike.

Linux carries a process's peak RSS into a child that execs (ru_maxrss starts from the
parent's high-water mark), so a child of a large process (pytest, the bench runner) reports
at least its parent's size: a small Python forks the command, waits for it and reports.
"""

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(str(usage.ru_maxrss * 1024))  # Linux counts in KiB
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_with_peak_rss(
    command: list[str], env: Mapping[str, str] | None = None, stderr: int | None = None
) -> tuple[int, bytes | None, int]:
    """Run command to its end, stdout discarded: its exit code, stderr (if stderr is
    subprocess.PIPE) and peak RSS in bytes. Interrupted, the command is killed with it."""
    with tempfile.TemporaryDirectory(prefix="arkfs-peak-") as scratch:
        peak = Path(scratch) / "peak"
        proc = subprocess.Popen(
            [sys.executable, "-c", _LAUNCHER, str(peak), *command],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,  # one group: the launcher and the command stop together
        )
        try:
            _, err = proc.communicate()
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        return proc.returncode, err, int(peak.read_text()) if peak.exists() else 0
