"""Running `arkfs` with stderr on a real pseudo-terminal, and reading back the frames rich
drew on it."""

import fcntl
import os
import re
import select
import struct
import subprocess
import termios

from tests.support.cli import ARKFS

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
REDRAW = re.compile(r"\r(?:\x1b\[2K\x1b\[1A)*\x1b\[2K")  # rich's Live: back to a frame's top


def run_in_terminal(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `arkfs ARGS...` with stderr on a pseudo-terminal of 160 columns; its exit code,
    stdout, and everything written to the terminal."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    env = (env or dict(os.environ)) | {"TERM": "xterm-256color"}
    try:
        proc = subprocess.Popen(
            [ARKFS, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=slave,
            env={k: v for k, v in env.items() if k not in ("COLUMNS", "LINES")},
        )
    finally:
        os.close(slave)
    screen = bytearray()
    try:
        while select.select([master], [], [], 300)[0]:
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: the terminal's last writer is gone
                break
            if not data:
                break
            screen += data
        stdout = proc.communicate(timeout=60)[0].decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    return proc.returncode, stdout, screen.decode()


def frames(screen: str, whole: str) -> list[dict[str, str]]:
    """Each frame rich drew with a row named whole, as its rows by name (first word) -> the
    row's text."""
    out = []
    for raw in REDRAW.split(screen):
        lines = [ANSI.sub("", line).strip() for line in raw.splitlines()]
        rows = {line.split()[0]: line for line in lines if line}
        if whole in rows:
            out.append(rows)
    return out


def percent(row: str) -> int:
    """The percent a row shows."""
    match = re.search(r"\s(\d{1,3})%", row)
    assert match, row
    return int(match[1])
