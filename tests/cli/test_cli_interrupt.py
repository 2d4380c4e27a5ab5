"""Ctrl-C at any moment of `arkfs` (while its modules load, or once the command runs) exits
130 with at most one line on stderr: never a traceback, never death by the signal. (Before
arkfs.cli.main has loaded, the interpreter's own start-up, this is Python's to answer.)

The moments are found without timing: with PYTHONPROFILEIMPORTTIME, Python reports each
module on stderr as it finishes loading, so SIGINT is sent right after a chosen module has
loaded (the rest still loading), or once the command waits on its input."""

import contextlib
import os
import signal
import subprocess

import pytest

from tests.support.cli import ARKFS

# After which module SIGINT is sent: the parser's first ones, then those the command's module
# loads (it is still loading); None: once the command waits for stdin.
MOMENTS = ["arkfs.cli.mount_form", "arkfs.cli.helptext", "arkfs.xet.hashing", "arkfs.xet.digest"]


@pytest.mark.parametrize("after", [*MOMENTS, None])
def test_ctrl_c_exits_130_with_one_line(after: str | None) -> None:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    proc = subprocess.Popen(
        [ARKFS, "xet", "hash", "-"],  # reads stdin, which stays open and empty
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert proc.stdin is not None and proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("import time:") and line.split("|")[-1].strip() == (
                after or "arkfs.xet.digest"
            ):
                break
        if after is None:
            _wait_for_read(proc)
        proc.send_signal(signal.SIGINT)
        # stdin closes, as when the writer of a shell pipeline is interrupted too
        _, err = proc.communicate(input="", timeout=60)
    finally:
        proc.kill()
        proc.wait()
    said = [line for line in err.splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 130, said
    assert len(said) <= 1 and "Traceback" not in err, said


def _wait_for_read(proc: subprocess.Popen[str]) -> None:
    """Return once the process (one of its threads) is blocked reading stdin, or has ended."""
    while proc.poll() is None:
        for tid in os.listdir(f"/proc/{proc.pid}/task"):
            fields: list[str] = []
            with contextlib.suppress(OSError), open(f"/proc/{proc.pid}/task/{tid}/syscall") as f:
                fields = f.read().split()
            if fields[:2] == ["0", "0x0"]:  # read(0, ...)
                return
