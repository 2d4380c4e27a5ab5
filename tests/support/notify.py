"""A NOTIFY_SOCKET as systemd gives one: a unix datagram socket that collects sd_notify
messages."""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path


class NotifySocket:
    """The bound socket; messages() waits for the lines the daemons send."""

    def __init__(self, sock: socket.socket, path: Path) -> None:
        self.sock, self.path = sock, path
        self.lines: list[str] = []

    def wait_for(self, line: str, timeout: float = 60.0) -> list[str]:
        """Receive messages until one carries line; every line received so far."""
        self.sock.settimeout(timeout)
        while line not in self.lines:
            data = self.sock.recv(4096)  # socket.timeout fails the test
            self.lines += data.decode().split("\n")
        return self.lines


@contextmanager
def notify_socket() -> Iterator[NotifySocket]:
    """A NOTIFY_SOCKET in a short temp path (unix socket paths are short); removed after."""
    folder = Path(tempfile.mkdtemp(prefix="arkfs-notify-"))
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(str(folder / "notify"))
        yield NotifySocket(sock, folder / "notify")
    finally:
        sock.close()
        shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def notifying(argv: Sequence[str]) -> Iterator[list[str]]:
    """Run a daemon with a NOTIFY_SOCKET; yield the lines it sent up to READY=1; then stop
    it with SIGTERM, and check that it said STOPPING=1 and exited 0."""
    with notify_socket() as notify:
        proc = subprocess.Popen(
            argv,
            env={**os.environ, "NOTIFY_SOCKET": str(notify.path)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            yield notify.wait_for("READY=1")
            proc.send_signal(signal.SIGTERM)
            notify.wait_for("STOPPING=1")
            assert proc.wait(timeout=30) == 0
        finally:
            proc.kill()
            proc.wait()
