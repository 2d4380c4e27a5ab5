"""`arkfs serve` as a real subprocess on 127.0.0.1, stopped even when a test fails."""

import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import msgpack

from arkfs.ark.manifest import Manifest
from tests.support.cli import ARKFS


@contextmanager
def arkfs_server(
    store: Path, *extra: str, timeout: float = 30
) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    """Start `arkfs serve --store STORE --port 0 EXTRA...`; yield its base URL and process."""
    proc = subprocess.Popen(
        [ARKFS, "serve", "--store", str(store), "--port", "0", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        line = _wait_for_line(proc, timeout)
        yield line.rsplit(" on ", 1)[1].strip(), proc
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        proc.stdout.close()  # type: ignore[union-attr]
        proc.stderr.close()  # type: ignore[union-attr]


def _wait_for_line(proc: subprocess.Popen[str], timeout: float) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)  # type: ignore[arg-type]
    if not sel.select(timeout):
        raise RuntimeError(f"arkfs serve did not start within {timeout} s")
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if "serving" not in line:
        raise RuntimeError(f"arkfs serve failed: {line}{proc.stderr.read()}")  # type: ignore[union-attr]
    return line


def put_archive(
    url: str, manifest: bytes, erc: str, token: str, ark: str | None = None
) -> httpx.Response:
    """PUT a bind request (msgpack manifest bytes, ERC text) to ark (default: the manifest's)."""
    target = ark or Manifest.from_msgpack(manifest).ark
    body = msgpack.packb({"manifest": manifest, "erc": erc}, use_bin_type=True)
    return httpx.put(
        f"{url}/{target}", content=body, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
