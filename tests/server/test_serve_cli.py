"""`arkfs serve` as a daemon: start-up errors in one line and exit 2 (a busy port: in
tests/cli/test_cli_errors.py), SIGINT and SIGTERM
end it with exit 0 and one line, and readiness over a real NOTIFY_SOCKET."""

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.support.cli import ARKFS, run_arkfs
from tests.support.notify import notifying
from tests.support.server import Server


def one_line_exit_2(done: subprocess.CompletedProcess[str], words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and words in done.stderr, done.stderr


def test_a_bad_port_and_an_uncreatable_store_are_one_line_and_exit_2(tmp_path: Path) -> None:
    store = ("--store", str(tmp_path / "s"))
    one_line_exit_2(run_arkfs("serve", *store, "--port", "70000", "--open-read"), "--port 70000")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    one_line_exit_2(
        run_arkfs("serve", "--store", str(blocker / "s"), "--port", "0", "--open-read"),
        f"cannot create the store {blocker / 's'}",
    )


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_serve_with_exit_0_and_one_line(tmp_path: Path, signum: int) -> None:
    with Server(tmp_path / "s", "--open-read") as server:
        assert httpx.get(f"{server.url}/.well-known/ark", timeout=30).status_code == 200
        proc = server.proc
        assert proc is not None
        os.kill(proc.pid, signum)
        assert proc.wait(timeout=30) == 0
        err = proc.stderr.read()  # type: ignore[union-attr]
        assert "Traceback" not in err, err
        assert err.splitlines()[-1] == f"arkfs: {signal.Signals(signum).name}: stopped serving"


def test_serve_tells_systemd_it_is_ready_and_stopping(tmp_path: Path) -> None:
    argv = [ARKFS, "serve", "--store", str(tmp_path / "s"), "--port", "0", "--open-read"]
    with notifying(argv) as lines:
        status = [line for line in lines if line.startswith("STATUS=serving")]
        assert status and "http://127.0.0.1:" in status[0], lines
