"""A server program of the system's (nginx, haproxy, squid) run in the foreground for a test:
started in its own session, waited for until it listens, stopped at the end even when the
test fails."""

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def listening(
    argv: list[str], port: int, *, wait: float = 30, why: Callable[[], str] = lambda: ""
) -> Iterator[None]:
    """Run argv until the block ends, once it accepts connections on 127.0.0.1:port.
    RuntimeError (with its stderr and why()) if it exits or is not listening within wait s."""
    proc = subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    assert proc.stderr is not None
    name = os.path.basename(argv[0])
    try:
        deadline = time.monotonic() + wait
        while not _accepts(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} failed: {proc.stderr.read().decode()}{why()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{name} did not listen on {port} within {wait:g} s")
            time.sleep(0.05)
        yield
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        proc.stderr.close()


def _accepts(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
