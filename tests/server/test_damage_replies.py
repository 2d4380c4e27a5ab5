"""Damage in the store reaches clients as a clean error in the route's format, and the
server's log as exactly one line, never a traceback."""

import os
import random
import signal
import socket
import subprocess
from pathlib import Path

import httpx
import pytest
import trio

from arkfs.backend.embedded import EmbeddedBackend
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.xorb import CHUNK_HEADER_SIZE
from tests.backend.content import Content, build_content, erc_of, manifest_of, upload
from tests.support.server import arkfs_server

READ = {"Authorization": "Bearer r"}


def stored(root: Path, content: Content, bind: bool = False) -> None:
    """Upload content into the store at root (and bind its archive) before any server runs."""

    async def main() -> None:
        backend = EmbeddedBackend(LocalStore.open(root))
        try:
            await upload(backend, content)
            if bind:
                await backend.bind(manifest_of(content.files), erc_of())
        finally:
            await backend.aclose()

    trio.run(main)


def damage(root: Path, xorb_hash: bytes, offset: int) -> str:
    """Flip one byte of a stored xorb (offset from its end if negative); its hash string."""
    name = hash_to_string(xorb_hash)
    path = root / "xorbs" / name[:2] / name
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return name


def stopped_log(proc: subprocess.Popen[str]) -> list[str]:
    """Stop the server and return the lines it logged."""
    os.killpg(proc.pid, signal.SIGTERM)
    proc.wait(timeout=10)
    return proc.stderr.read().splitlines()  # type: ignore[union-attr]


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    (tmp_path / "tokens").write_text("r read\nw write\n")
    return tmp_path / "tokens"


def test_damaged_footer_makes_reconstruction_a_json_500_and_one_log_line(
    tmp_path: Path, tokens: Path
) -> None:
    content = build_content({"f": random.Random(1).randbytes(400_000)})
    store = tmp_path / "store"
    stored(store, content)
    f = content.files["f"]
    xorb = damage(store, content.xorbs[0].hash, -60)  # inside the footer's chunk boundaries
    with arkfs_server(store, "--tokens", str(tokens)) as (url, proc):
        r = httpx.get(f"{url}/v1/reconstructions/{hash_to_string(f.hash)}", headers=READ)
        assert r.status_code == 500
        assert r.headers["content-type"] == "application/json"
        assert list(r.json()) == ["error"]
        assert f"xorb {xorb} is damaged" in r.json()["error"]
        log = stopped_log(proc)
    assert [line for line in log if xorb in line] == [
        line for line in log if "GET /v1/reconstructions/" in line
    ]
    assert len([line for line in log if xorb in line]) == 1
    assert not any("Traceback" in line for line in log)


def test_damage_found_mid_stream_cuts_the_reply_with_one_log_line(
    tmp_path: Path, tokens: Path
) -> None:
    content = build_content({"f": random.Random(2).randbytes(2_000_000)})
    store = tmp_path / "store"
    stored(store, content, bind=True)
    xorb = damage(store, content.xorbs[-1].hash, CHUNK_HEADER_SIZE + 10)  # a late chunk
    path = f"/{manifest_of(content.files).ark}/data/f"
    with arkfs_server(store, "--tokens", str(tokens)) as (url, proc):
        with pytest.raises(httpx.RemoteProtocolError):  # fewer bytes than Content-Length
            httpx.get(url + path, headers=READ, timeout=30)
        log = stopped_log(proc)
    [line] = [line for line in log if path in line]
    assert "reply cut short" in line and f"xorb {xorb} is damaged" in line
    assert not any("Traceback" in line for line in log)


def test_a_client_going_away_mid_upload_logs_no_traceback(tmp_path: Path, tokens: Path) -> None:
    with arkfs_server(tmp_path / "store", "--tokens", str(tokens)) as (url, proc):
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=30) as s:
            head = (
                f"POST /v1/xorbs/default/{'0' * 64} HTTP/1.1\r\nHost: x\r\n"
                "Authorization: Bearer w\r\nContent-Length: 1000000\r\n\r\n"
            )
            s.sendall(head.encode() + bytes(10_000))
        assert httpx.get(f"{url}/arks", headers=READ).json() == {"arks": []}  # still serving
        log = stopped_log(proc)
    assert not any("Traceback" in line or "Error" in line for line in log), log
