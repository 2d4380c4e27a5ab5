"""Headless Chromium (Debian's `chromium`) for tests: the rendered DOM and screenshots.

Every run gets a fresh profile under the caller's directory, no network beyond the URL, and
a time limit; the process group is killed when it runs over.
"""

import os
import signal
import subprocess
import tempfile
from pathlib import Path

CHROMIUM = "chromium"
TIMEOUT = 60.0  # seconds one page may take to render
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)


def _run(args: list[str], workdir: Path) -> str:
    """Run chromium with FLAGS, a fresh profile and args; its stdout."""
    profile = tempfile.mkdtemp(prefix="profile-", dir=workdir)
    cmd = [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", *args]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}: {err[-2000:]}"
    return out


def dump_dom(url: str, workdir: Path) -> str:
    """The DOM Chromium renders for url, serialized."""
    return _run(["--dump-dom", url], workdir)


def screenshot(url: str, out: Path, workdir: Path, width: int = 412) -> Path:
    """A PNG of url at a phone's width (default) into out."""
    _run([f"--screenshot={out}", f"--window-size={width},900", url], workdir)
    assert out.stat().st_size > 0, out
    return out
