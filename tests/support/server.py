"""`arkfs serve` as a real subprocess on 127.0.0.1, stopped even when a test fails."""

import contextlib
import os
import selectors
import signal
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgpack

from arkfs.archive.manifest import Manifest
from tests.support.cli import ARKFS
from tests.support.secrets import SERVER_LOGS
from tests.support.services import place_for, scaled_instead


def _spawn(
    store: Path | str, port: int, extra: tuple[str, ...], timeout: float
) -> tuple[str, subprocess.Popen[str]]:
    """Start `arkfs serve --store STORE --port PORT EXTRA...`; its base URL and process.

    With ARKFS_TEST_STORE=s3, a store directory is replaced by a bucket and database."""
    where: tuple[str, ...] = ("--store", str(store))
    if scaled_instead() and not str(store).startswith("s3://"):
        where = place_for(store).serve_args()
    proc = subprocess.Popen(
        [ARKFS, "serve", *where, "--port", str(port), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = _wait_for_line(proc, timeout)
    except BaseException:
        _stop(proc)
        raise
    return line.rsplit(" on ", 1)[1].strip(), proc


def _stop(proc: subprocess.Popen[str]) -> None:
    """Stop a server (SIGTERM, and SIGCONT in case a test froze it); close its pipes."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        os.killpg(proc.pid, signal.SIGCONT)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    _keep_log(proc)
    proc.stdout.close()  # type: ignore[union-attr]
    proc.stderr.close()  # type: ignore[union-attr]


def _keep_log(proc: subprocess.Popen[str]) -> None:
    """Keep what the server logged and printed (`--access-log -`), and no test read, for the
    session's check for secrets."""
    folder = os.environ.get(SERVER_LOGS)
    for stream, name in ((proc.stderr, "log"), (proc.stdout, "out.log")):
        if folder and stream is not None and not stream.closed:
            with contextlib.suppress(OSError, ValueError):
                Path(folder, f"serve-{proc.pid}.{name}").write_text(stream.read())


@contextmanager
def arkfs_server(
    store: Path | str, *extra: str, timeout: float = 30
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start `arkfs serve --store STORE --port 0 EXTRA...`; yield its base URL and process."""
    url, proc = _spawn(store, 0, extra, timeout)
    try:
        yield url, proc
    finally:
        _stop(proc)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`arkfs serve` on a fixed port, so it can stop and start again at the same URL (with
    --key-file in extra, its tokens and signed URLs outlive a restart). Use it as a context
    manager: whatever process runs at the end is stopped, even when a test fails."""

    def __init__(self, store: Path | str, *extra: str) -> None:
        self.store, self.extra = store, extra
        self.url = f"http://127.0.0.1:{free_port()}"
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        """Start the server (at the same URL as before)."""
        assert self.proc is None, "the server is running"
        url, self.proc = _spawn(self.store, int(self.url.rsplit(":", 1)[1]), self.extra, 30)
        assert url == self.url, url

    def stop(self) -> None:
        """Stop the server and wait until it is gone."""
        if self.proc is not None:
            _stop(self.proc)
            self.proc = None

    def signal(self, signum: int) -> None:
        """Send signum to the server's process group (SIGSTOP freezes it, SIGCONT thaws it)."""
        assert self.proc is not None, "the server is not running"
        os.killpg(self.proc.pid, signum)

    def stats(self, token: str | None = None) -> dict[str, int]:
        """The server's CAS counters (GET /v1/stats)."""
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        resp = httpx.get(f"{self.url}/v1/stats", headers=headers, timeout=30)
        resp.raise_for_status()
        return dict(resp.json())

    def __enter__(self) -> "Server":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_for_line(proc: subprocess.Popen[str], timeout: float) -> str:
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    if not sel.select(timeout):
        raise RuntimeError(f"arkfs serve did not start within {timeout} s")
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if "serving" not in line:
        raise RuntimeError(f"arkfs serve failed: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
    return line


def put_archive(
    url: str,
    manifest: bytes,
    erc: str,
    token: str,
    ark: str | None = None,
    message: str | None = None,
) -> httpx.Response:
    """PUT a bind request (msgpack manifest bytes, ERC text, and a message if given) to ark
    (default: the manifest's)."""
    target = ark or Manifest.from_msgpack(manifest).ark
    request = {"manifest": manifest, "erc": erc}
    if message is not None:
        request["message"] = message
    body = msgpack.packb(request, use_bin_type=True)
    return httpx.put(
        f"{url}/{target}", content=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
