"""RemoteBackend against a real `arkfs serve`: tokens, failures, and hf_xet's uploads."""

import http.server
import json
import random
import socket
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import httpx
import msgpack
import pytest
import trio

from arkfs.archive.manifest import Entry, Kind, Manifest
from arkfs.ark.erc import Erc
from arkfs.backend import remote
from arkfs.backend.base import BadReply, NotBound, Unauthorized, Unreachable
from arkfs.backend.remote import RemoteBackend
from arkfs.xet.hashing import string_to_hash
from tests.backend.content import File, build_content, read_range, upload
from tests.support.corpus import corpus
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server
from tests.support.threaded import serve_in_thread

TOKENS = "reader read\nwriter write\n"
SECRET = "s3cret-user-token"
T = TypeVar("T")


def run(
    url: str, token: str | None, body: Callable[[RemoteBackend], Awaitable[T]], **options: Any
) -> T:
    """Run body with a RemoteBackend opened for it inside trio.run."""

    async def main() -> T:
        backend = RemoteBackend(url, token, **options)
        try:
            return await body(backend)
        finally:
            await backend.aclose()

    return trio.run(main)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("remote")
    (root / "tokens").write_text(TOKENS)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        yield url, root


@pytest.fixture(scope="module")
def fresh(server: tuple[str, Path]) -> File:
    """A small file uploaded through a RemoteBackend with the write token."""
    content = build_content({"file": random.Random(8).randbytes(400_000)})
    run(server[0], "writer", lambda b: upload(b, content))
    return content.files["file"]


def test_hf_xet_uploads_read_back(server: tuple[str, Path]) -> None:
    url, root = server
    data = corpus()
    names = ["8193", "repeated-blocks", "float32"]
    for name in names:
        (root / name).write_bytes(data[name])
    infos = upload_files(url, [root / n for n in names], token="writer")

    async def body(b: RemoteBackend) -> None:
        for name, info in zip(names, infos, strict=True):
            fh = string_to_hash(info.hash)
            assert await b.has_file(fh, info.file_size)
            assert await read_range(b, fh, 0, info.file_size) == data[name]
            assert await read_range(b, fh, 5000, 9000) == data[name][5000:9000]
        assert b.bytes_fetched > sum(len(data[n]) for n in names) // 4

    run(url, "reader", body)


def test_bad_token_is_unauthorized_and_never_shown(server: tuple[str, Path], fresh: File) -> None:
    url, _ = server

    async def body(b: RemoteBackend) -> None:
        assert SECRET not in repr(b)
        calls: list[Callable[[], Awaitable[object]]] = [
            lambda: b.reconstruction(fresh.hash, 0, 10),
            lambda: b.archive("ark:99999/fk4any"),
            lambda: b.list_archives(),
        ]
        for call in calls:
            with pytest.raises(Unauthorized) as info:
                await call()
            assert SECRET not in str(info.value)

    run(url, SECRET, body)


def test_missing_token_is_unauthorized(server: tuple[str, Path], fresh: File) -> None:
    async def body(b: RemoteBackend) -> None:
        with pytest.raises(Unauthorized, match="ARKFS_TOKEN"):
            await b.has_file(fresh.hash, len(fresh.data))

    run(server[0], None, body)


def test_read_token_cannot_write(server: tuple[str, Path]) -> None:
    content = build_content({"x": random.Random(4).randbytes(30_000)})
    x = content.xorbs[0]

    async def body(b: RemoteBackend) -> None:
        with pytest.raises(Unauthorized, match="scope"):
            await b.upload_xorb(x.hash, x.data)

    run(server[0], "reader", body)


def test_open_read_server_needs_no_token(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text(TOKENS)
    content = build_content({"file": random.Random(12).randbytes(100_000)})
    f = content.files["file"]
    with arkfs_server(tmp_path / "store", "--open-read", "--tokens", str(tmp_path / "tokens")) as (
        url,
        _,
    ):
        run(url, "writer", lambda b: upload(b, content))

        async def body(b: RemoteBackend) -> None:
            assert await read_range(b, f.hash, 10, 90_000) == f.data[10:90_000]
            with pytest.raises(Unauthorized):
                await b.upload_shard(content.shard)

        run(url, None, body)


def test_stopped_server_is_unreachable(tmp_path: Path) -> None:
    with arkfs_server(tmp_path / "store", "--open-read") as (url, _):
        pass

    async def body(b: RemoteBackend) -> None:
        with pytest.raises(Unreachable, match="cannot reach"):
            await b.archive("ark:99999/fk4gone")
        with pytest.raises(Unreachable, match="arkfs serve"):
            await b.reconstruction(bytes(32), 0, 1)

    run(url, "writer", body, retries=2, retry_time=2.0)


def test_refused_fetch_url_is_unauthorized(server: tuple[str, Path], fresh: File) -> None:
    async def body(b: RemoteBackend) -> None:
        rec = await b.reconstruction(fresh.hash, 0, len(fresh.data))
        xh, (fr, *_) = next(iter(rec.fetch.items()))
        good = await b.fetch(xh, fr)
        assert len(good) == fr.byte_end - fr.byte_start + 1
        forged = replace(fr, url=fr.url.split("?")[0] + "?expires=1&sig=00")
        with pytest.raises(Unauthorized, match="new reconstruction"):
            await b.fetch(xh, forged)
        with pytest.raises(Unauthorized, match="new reconstruction"):
            await b.footer(xh, forged)
        with pytest.raises(BadReply, match="footer"):
            await b.footer(bytes(32), fr)  # a footer that is not the named xorb's

    run(server[0], "reader", body)


def cas_stats(url: str) -> dict[str, int]:
    """The server's counters (GET /v1/stats, with the read token)."""
    resp = httpx.get(f"{url}/v1/stats", headers={"Authorization": "Bearer reader"}, timeout=30)
    resp.raise_for_status()
    return dict(resp.json())


@pytest.mark.parametrize("guess", [remote.FOOTER_GUESS, 64])
def test_footers_take_one_suffix_request_or_two_when_longer_than_the_guess(
    guess: int, server: tuple[str, Path], fresh: File, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(remote, "FOOTER_GUESS", guess)

    async def body(b: RemoteBackend) -> int:
        rec = await b.reconstruction(fresh.hash, 0, len(fresh.data))
        for xh, (fr, *_) in rec.fetch.items():
            footer = await b.footer(xh, fr)
            assert footer.xorb_hash == xh and len(footer.chunk_hashes) > 1
        return len(rec.fetch)

    before = cas_stats(server[0])
    xorbs = run(server[0], "reader", body)
    after = cas_stats(server[0])
    assert after["footer_requests"] - before["footer_requests"] == xorbs * (1 if guess > 64 else 2)
    assert after["xorb_requests"] == before["xorb_requests"]


def test_token_renewed_when_the_server_restarts(tmp_path: Path) -> None:
    """A restart without --key-file voids the CAS tokens: one 401, one renewal, on we go."""
    (tmp_path / "tokens").write_text(TOKENS)
    content = build_content({"file": random.Random(15).randbytes(200_000)})
    f = content.files["file"]
    args = (tmp_path / "store", "--tokens", str(tmp_path / "tokens"))

    async def main() -> None:
        with arkfs_server(*args) as (url, _):
            backend = RemoteBackend(url, "writer")
            try:
                await upload(backend, content)
                assert await read_range(backend, f.hash, 0, 100) == f.data[:100]
            except BaseException:
                await backend.aclose()
                raise
        try:
            with arkfs_server(*args, "--port", url.rsplit(":", 1)[1]):
                assert await read_range(backend, f.hash, 100, 200) == f.data[100:200]
                assert await backend.upload_shard(content.shard) is False
        finally:
            await backend.aclose()

    trio.run(main)


# --- a stand-in token service in front of the real CAS ------------------------------------


@dataclass
class TokenService:
    """Hands out the given access tokens in turn (the last one forever) for a real CAS."""

    cas_url: str
    tokens: list[str]
    seen: list[str | None] = field(default_factory=list)  # Authorization of each request


@contextmanager
def token_service(service: TokenService) -> Iterator[str]:
    """Serve `GET /v1/token/{scope}` on 127.0.0.1; yield its base URL."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            if not self.path.startswith("/v1/token/"):
                body, status = b'{"error": "not here"}', 404
            elif service.tokens == ["not json"]:
                body, status = b"not json", 200
            else:
                service.seen.append(self.headers.get("Authorization"))
                token = service.tokens.pop(0) if len(service.tokens) > 1 else service.tokens[0]
                reply = {"accessToken": token, "exp": time.time() + 3600, "casUrl": service.cas_url}
                body, status = json.dumps(reply).encode(), 200
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    with serve_in_thread(Handler) as url:
        yield url


def test_cas_token_from_the_token_route_renewed_once(server: tuple[str, Path], fresh: File) -> None:
    """The user token goes to the token route only; CAS calls carry the access token at
    casUrl; a 401 renews it once, a second 401 is Unauthorized."""
    service = TokenService(server[0], ["stale", "reader"])

    async def renews(b: RemoteBackend) -> None:
        assert await read_range(b, fresh.hash, 0, 1000) == fresh.data[:1000]
        assert await b.has_file(fresh.hash, len(fresh.data))

    async def gives_up(b: RemoteBackend) -> None:
        with pytest.raises(Unauthorized):
            await b.has_file(fresh.hash, len(fresh.data))

    async def malformed(b: RemoteBackend) -> None:
        with pytest.raises(BadReply, match="JSON"):
            await b.has_file(fresh.hash, len(fresh.data))

    with token_service(service) as base:
        run(base, SECRET, renews)
        assert service.seen == [f"Bearer {SECRET}"] * 2
        service.tokens = ["stale"]
        run(base, SECRET, gives_up)
        service.tokens = ["not json"]
        run(base, SECRET, malformed)


def test_unbound_ark(server: tuple[str, Path]) -> None:
    async def body(b: RemoteBackend) -> None:
        with pytest.raises(NotBound, match="fk4unbound"):
            await b.archive("ark:99999/fk4unbound")

    run(server[0], "reader", body)


def test_silent_and_failing_servers_are_unreachable() -> None:
    """A server that never answers times out; one that answers 503 is retried, then given up."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # connections complete in the backlog; nothing is ever sent back
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"

        async def times_out(b: RemoteBackend) -> None:
            with pytest.raises(Unreachable, match="no answer in time"):
                await b.list_archives()

        run(url, "t", times_out, retries=1, timeout=0.5)

    class Failing(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            self.send_error(503, "down for maintenance")

    async def fails(b: RemoteBackend) -> None:
        with pytest.raises(Unreachable, match="HTTP 503"):
            await b.list_archives()

    with serve_in_thread(Failing) as url:
        run(url, "t", fails, retries=2)


def test_bind_body_is_the_packed_request_without_a_second_copy() -> None:
    """_bind_body writes the manifest's pieces into the request: the bytes packb gives."""
    ark = "ark:12345/x6body"
    entries = [Entry(f"f{i:05}", Kind.FILE, 3, 0o644, i, bytes(32)) for i in range(30_000)]
    manifest = Manifest(ark, entries)
    erc = Erc(who="w", what="x", when="2026", where=ark)
    document = {"manifest": manifest.to_msgpack(), "erc": erc.to_anvl(), "message": "m"}
    body = remote._bind_body(manifest, erc, "m")
    assert body.joined() == msgpack.packb(document, use_bin_type=True)
    assert body.size == len(body.joined()) and any(p is manifest.entries._xet for p in body.pieces)


def test_a_bind_retried_after_a_503_sends_its_whole_body_again() -> None:
    """The bind body goes out from its pieces with a Content-Length (not chunked), and a
    retry sends every byte of it again."""
    ark = "ark:12345/x6again"
    entries = [Entry(f"f{i:05}", Kind.FILE, 3, 0o644, i, bytes(32)) for i in range(3_000)]
    manifest = Manifest(ark, entries)
    erc = Erc(who="w", what="x", when="2026", where=ark)
    expected = remote._bind_body(manifest, erc, "m").joined()
    received: list[tuple[str | None, str | None, bytes]] = []

    class FailsOnce(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_PUT(self) -> None:
            length = self.headers.get("Content-Length")
            chunked = self.headers.get("Transfer-Encoding")
            received.append((length, chunked, self.rfile.read(int(length or 0))))
            if len(received) == 1:
                self.send_error(503, "busy")
                return
            version = {"version": 1, "created": 1.0, "message": "m", "follows": None}
            reply = json.dumps({**version, "files": 3000, "bytes": 9000})
            self.send_response(201)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply.encode())

    async def binds(b: RemoteBackend) -> None:
        await b.bind(manifest, erc, "m")

    with serve_in_thread(FailsOnce) as url:
        run(url, "t", binds, retries=2)
    assert [r[:2] for r in received] == [(str(len(expected)), None)] * 2
    assert all(body == expected for _, _, body in received)
