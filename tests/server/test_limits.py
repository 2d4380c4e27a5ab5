"""Bounded input on every route: body limits (telemetry included), and numbers far too long
to convert (Range, derived tokens) answered as client errors, never as 500."""

import json
import random
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import httpx
import pytest
import trio

from arkfs.backend.embedded import EmbeddedBackend
from arkfs.server.cas import MAX_TELEMETRY
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from tests.backend.content import Content, build_content, erc_of, manifest_of, upload
from tests.support.server import arkfs_server

READ = {"Authorization": "Bearer r"}
HUGE = "9" * 5000  # Python refuses int() of more than 4,300 digits
GIB = 1 << 30
# What hf_xet 1.8 posts after an upload (HF_XET_TELEMETRY_ENABLED unset), shortened.
TELEMETRY = {
    "time": "2026-01-01T00:00:00.000Z",
    "event": "xet_upload_summary",
    "session_id": "01a209a2-0018-7d91-bcb5-91c9ad8cb08b",
    "user_agent": "hf_xet/1.8.0",
    "metrics": {"arch": "x86_64", "client_version": "1.8.0", "dedup_bytes": 0},
}


@dataclass
class Served:
    url: str
    content: Content
    ark: str

    @property
    def file_hash(self) -> str:
        return hash_to_string(self.content.files["f"].hash)

    @property
    def size(self) -> int:
        return len(self.content.files["f"].data)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A server with --open-read and one bound archive of one file, 'data/f'."""
    root = tmp_path_factory.mktemp("limits")
    (root / "tokens").write_text("r read\nw write\n")
    content = build_content({"f": random.Random(4).randbytes(300_000)})

    async def fill() -> None:
        backend = EmbeddedBackend(LocalStore.open(root / "store"))
        try:
            await upload(backend, content)
            await backend.bind(manifest_of(content.files), erc_of())
        finally:
            await backend.aclose()

    trio.run(fill)
    args = ("--tokens", str(root / "tokens"), "--open-read")
    with arkfs_server(root / "store", *args) as (url, _):
        yield Served(url, content, manifest_of(content.files).ark)


def raw_status(url: str, head: str, body: bytes = b"") -> tuple[int, str]:
    """Send a request head (and body bytes) on a socket; the reply's status and text.

    The socket stays open and the body may be shorter than announced: a server that waited
    for the rest would never answer, and the read would time out.
    """
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        reply = b""
        while b"\r\n\r\n" not in reply:
            reply += s.recv(65536)
        headers, _, rest = reply.partition(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        while len(rest) < length:
            rest += s.recv(65536)
    return int(headers.split()[1]), rest.decode()


# --- telemetry ---------------------------------------------------------------------------


def test_telemetry_needs_a_token_even_with_open_read(served: Served) -> None:
    r = httpx.post(f"{served.url}/v1/telemetry", json=TELEMETRY)
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "token" in r.json()["error"]


def test_telemetry_from_hf_xet_is_taken_with_either_token(served: Served) -> None:
    for token in ("r", "w"):
        r = httpx.post(
            f"{served.url}/v1/telemetry",
            content=json.dumps(TELEMETRY),
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        assert r.status_code == 200 and r.json() == {}


def test_telemetry_over_the_limit_is_413(served: Served) -> None:
    r = httpx.post(f"{served.url}/v1/telemetry", content=bytes(MAX_TELEMETRY + 1), headers=READ)
    assert r.status_code == 413 and "exceeds" in r.json()["error"]


def test_a_huge_declared_body_is_refused_unread(served: Served) -> None:
    head = f"POST /v1/telemetry HTTP/1.1\nHost: x\nAuthorization: Bearer r\nContent-Length: {GIB}\n"
    status, text = raw_status(served.url, head, b"{}")
    assert status == 413 and "exceeds" in text


def test_a_chunked_body_is_refused_once_past_the_limit(served: Served) -> None:
    head = (
        "POST /v1/telemetry HTTP/1.1\nHost: x\nAuthorization: Bearer r\n"
        "Transfer-Encoding: chunked\n"
    )
    chunk = b"%x\r\n" % 8192 + bytes(8192) + b"\r\n"
    status, _ = raw_status(served.url, head, chunk * (MAX_TELEMETRY // 8192 + 1))
    assert status == 413  # the last chunk never came: the server did not wait for it


def test_routes_without_a_body_do_not_read_one(served: Served) -> None:
    for path in ("/arks", f"/v1/reconstructions/{served.file_hash}", "/.well-known/ark"):
        head = f"GET {path} HTTP/1.1\nHost: x\nAuthorization: Bearer r\nContent-Length: {GIB}\n"
        status, _ = raw_status(served.url, head)
        assert status == 200, path


def test_writes_check_the_token_before_the_body(served: Served) -> None:
    for path in ("/v1/shards", f"/v1/xorbs/default/{'0' * 64}"):
        status, _ = raw_status(
            served.url, f"POST {path} HTTP/1.1\nHost: x\nContent-Length: {GIB}\n"
        )
        assert status == 401, path
    status, _ = raw_status(
        served.url, f"PUT /{served.ark} HTTP/1.1\nHost: x\nContent-Length: {GIB}\n"
    )
    assert status == 401


# --- numbers too long to convert ------------------------------------------------------


def test_ranges_with_thousands_of_digits_are_416_or_clipped(served: Served) -> None:
    rec = httpx.get(f"{served.url}/v2/reconstructions/{served.file_hash}").json()
    xorb_url = next(iter(rec["xorbs"].values()))[0]["url"]
    file_route = f"{served.url}/{served.ark}/data/f"
    for url, face in [
        (f"{served.url}/v1/reconstructions/{served.file_hash}", "json"),
        (f"{served.url}/v2/reconstructions/{served.file_hash}", "json"),
        (xorb_url, "json"),
        (file_route, "text"),
    ]:
        r = httpx.get(url, headers={"Range": f"bytes={HUGE}-"})
        assert r.status_code == 416, url
        assert "past its end" in (r.json()["error"] if face == "json" else r.text)
        for whole in (f"bytes=0-{HUGE}", f"bytes=-{HUGE}"):
            r = httpx.get(url, headers={"Range": whole})
            assert r.status_code in (200, 206), (url, whole)
    r = httpx.get(file_route, headers={"Range": f"bytes=-{HUGE}"})
    assert r.content == served.content.files["f"].data


def test_a_derived_token_with_a_huge_expiry_is_401(served: Served) -> None:
    forged = {"Authorization": f"Bearer arkfs1.write.{HUGE}.{'0' * 64}"}
    r = httpx.post(f"{served.url}/v1/shards", content=b"x", headers=forged)
    assert r.status_code == 401 and "malformed token" in r.json()["error"]
    r = httpx.put(f"{served.url}/{served.ark}", content=b"x", headers=forged)
    assert r.status_code == 401 and r.text.startswith("malformed token")
