"""`arkfs COMMAND --help` loads no machinery: building a command's parser imports none of the
heavy modules its run needs (issue 25: --help within three times a bare `python -c pass`).
What is imported is read from sys.modules in a fresh interpreter, not timed."""

import importlib.util
import json
import subprocess
import sys

import pytest

from arkfs.cli.main import COMMAND_NAMES

# Each costs tens of milliseconds to import, or pulls in a whole layer that does.
HEAVY = (
    "trio",
    "httpx",
    "pyfuse3",
    "lz4",
    "blake3",
    "msgspec",
    "msgpack",
    "hypercorn",
    "starlette",
    "rich",
    "sqlite3",
    "arkfs.api",
    "arkfs.backend.open",
    "arkfs.mount.daemon",
    "arkfs.publish.publisher",
    "arkfs.server.app",
    "arkfs.store.local",
)

SHOW_HELP = """
import json, sys
from arkfs.cli.main import main
try:
    main([sys.argv[1], "--help"])
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


@pytest.mark.parametrize("command", COMMAND_NAMES)
def test_help_imports_no_heavy_module(command: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SHOW_HELP, command], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["code"] == 0
    assert "usage: arkfs " + command in done.stdout
    loaded = [m for m in HEAVY if m in out["modules"]]
    assert not loaded, f"`arkfs {command} --help` imported {loaded}"


def test_the_http_client_comes_without_its_own_command_line() -> None:
    """httpx imports its command line (click, pygments) when they are installed, as they
    are here beside huggingface_hub: arkfs marks it missing, so a command's start-up does
    not pay for it."""
    code = (
        "import json, sys, arkfs, httpx; "
        "print(json.dumps([m for m in ('click', 'pygments', 'httpx._main') if sys.modules.get(m)]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    # installed here, so without the mark the list above would not be empty
    assert importlib.util.find_spec("click") is not None
