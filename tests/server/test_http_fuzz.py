"""Hostile HTTP against every route of a real `arkfs serve`: huge numbers, odd ARKs, bodies
where none belong, unauthenticated bodies of growing size. Never a 5xx, and the server's
resident memory stays under 300 MB throughout. Loopback only, a bounded set of requests."""

import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from arkfs.xet.hashing import hash_to_string
from tests.backend.content import build_content, erc_of, manifest_of
from tests.support.server import arkfs_server, put_archive

ARK = "ark:99999/fk4fuzz"
READ = {"Authorization": "Bearer r"}
WRITE = {"Authorization": "Bearer w"}
MAX_RSS = 300 * 1024 * 1024
HUGE = ["9" * 19, "9" * 25, "1" + "0" * 4400, "9" * 20_000, "-1", "0x10", "١٢", "1e9", "7_0"]


@dataclass
class Fuzzed:
    url: str
    pid: int
    file: str  # a stored file's hash
    xorb_url: str  # a signed URL of one of its xorbs
    max_rss: int = 0

    def rss(self) -> int:
        """The server's resident set size in bytes (VmRSS)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
        self.max_rss = max(self.max_rss, kib * 1024)
        return kib * 1024

    def send(self, method: str, path: str, **kwargs: object) -> int:
        """One request; its status (0 when the server closed the connection on us). Asserts
        no 5xx and the memory bound."""
        headers = {k: v.encode() for k, v in kwargs.pop("headers", {}).items()}  # type: ignore[attr-defined]
        try:
            r = httpx.request(method, self.url + path, headers=headers, timeout=60, **kwargs)  # type: ignore[arg-type]
            status = r.status_code
        except (httpx.RemoteProtocolError, httpx.WriteError, httpx.ReadError):
            status = 0
        assert status < 500, (method, path[:120], status)
        assert self.rss() < MAX_RSS, (method, path[:120], self.rss())
        return status


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "tokens").write_text("r read\nw write\n")
    content = build_content({"f-1.bin": bytes(range(256)) * 1200})
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, proc):
        for x in content.xorbs:
            httpx.post(
                f"{url}/v1/xorbs/default/{hash_to_string(x.hash)}", content=x.data, headers=WRITE
            )
        httpx.post(f"{url}/v1/shards", content=content.shard, headers=WRITE).raise_for_status()
        r = put_archive(
            url, manifest_of(content.files, ARK).to_msgpack(), erc_of(ARK).to_anvl(), "w"
        )
        assert r.status_code == 200, r.text
        fh = hash_to_string(content.files["f-1.bin"].hash)
        rec = httpx.get(f"{url}/v1/reconstructions/{fh}", headers=READ).json()
        xorb_url = next(iter(rec["fetch_info"].values()))[0]["url"]
        fuzzed = Fuzzed(url, proc.pid, fh, xorb_url.removeprefix(url))
        yield fuzzed
        assert proc.poll() is None, "the server died"


def test_half_closed_requests_end_only_their_connection(fuzzed: Fuzzed) -> None:
    # Headers, then EOF while the early reply (413, 401) goes out: hypercorn 0.18 raised
    # trio.BusyResourceError out of the connection and the whole server exited.
    for token in ("w", "nope") * 20:
        line = b"POST /v1/shards"
        raw_request(fuzzed, line, f"Content-Length: {10**12}\r\n".encode(), token)
    assert fuzzed.send("GET", "/.well-known/ark") == 200


@pytest.mark.slow
def test_huge_numbers_in_every_numeric_header_and_parameter(fuzzed: Fuzzed) -> None:
    f = fuzzed
    readers = [
        f"/v1/reconstructions/{f.file}",
        f"/v2/reconstructions/{f.file}",
        f.xorb_url,
        f"/{ARK}/data/f%2D1%2Ebin",
    ]
    for n in HUGE:
        for path in readers:
            for spec in (f"bytes=0-{n}", f"bytes={n}-", f"bytes=-{n}", f"bytes={n}-{n}"):
                f.send("GET", path, headers={**READ, "Range": spec})
        base, _, _ = f.xorb_url.partition("?")
        f.send("GET", f"{base}?expires={n}&sig=00")
        f.send("GET", f"{base}?expires={n}")
        for scope in ("read", "write"):
            token = {"Authorization": f"Bearer arkfs1.{scope}.{n}.00"}
            f.send("GET", f"/v1/reconstructions/{f.file}", headers=token)
            f.send("GET", f"/v1/token/{scope}", headers=token)
        f.send("GET", "/arks", params={"prefix": n}, headers=READ)
        f.send("GET", f"/arks?prefix={n}%00%FF%C3%A9", headers=READ)
        for path in ("/v1/shards", f"/{ARK}", "/v1/telemetry"):  # a declared length, no body
            status = raw_request(f, b"POST " + path.encode(), f"Content-Length: {n}\r\n".encode())
            assert status < 500, (path, n[:30], status)


@pytest.mark.slow
def test_odd_arks(fuzzed: Fuzzed) -> None:
    names = [
        "",
        "/",
        "%",
        "%zz",
        "%2",
        "99999",
        "99999/",
        "99999/fk4fuzz/",
        "/99999/fk4-fuzz",
        "99999/fk4fuzz/%2D",
        "99999/fk4fuzz/%2d%2D",
        "99999/fk4fuzz/-",
        "99999/fk4fuzz/--/-",
        "99999/fk4fuzz/%C3%A9",
        "99999/fk4fuzz/%FF%FE",
        "99999/fk4fuzz/%00",
        "99999/fk4fuzz/..",
        "99999/fk4fuzz/../../etc/passwd",
        "99999/fk4fuzz/%2E%2E/%2E%2E",
        "99999/fk4fuzz/data/..",
        "99999/fk4fuzz/data/.",
        "99999/fk4fuzz/data//f-1.bin",
        "99999/fk4fuzz/data/f-1.bin.",
        "99999/fk4fuzz/data/f-1.bin/x",
        "99999/fk4fuzz.v1.v2",
        "99999/fk4fuzz/./data",
        "99999/fk4fuzz/" + "a" * 2000,
        "99999/fk4fuzz/" + "a/" * 3000,
        "99999/" + "-" * 5000,
        "99999/fk4fuzz/" + "%2D" * 3000,
        "99999/fk4fuzz/data/" + "%" * 100,
    ]
    for name in names:
        for query in ("", "?info", "??", "?info&format=json", "?format=json"):
            f_path = f"/ark:{name}{query}"
            fuzzed.send("GET", f_path, headers=READ)
        fuzzed.send("PUT", f"/ark:{name}", headers=WRITE, content=b"\x80")
    for raw in (b"\xc3\xa9", b"\xff", b"x" * 60_000, b"%FF/..%2F"):
        status = raw_request(fuzzed, b"GET /ark:99999/fk4fuzz/" + raw)
        assert status < 500, (raw[:60], status)


def raw_request(fuzzed: Fuzzed, line: bytes, headers: bytes = b"", token: str = "w") -> int:
    """A request sent byte for byte (httpx would escape the path or refuse a false length):
    'METHOD TARGET', extra header lines; its status, 0 if none came."""
    host, port = fuzzed.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            line
            + f" HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n".encode()
            + b"Connection: close\r\n"
            + headers
            + b"\r\n"
        )
        s.shutdown(socket.SHUT_WR)
        try:
            reply = s.recv(64)
        except ConnectionResetError:  # closed on us: no reply, which is fine
            reply = b""
    assert fuzzed.rss() < MAX_RSS
    return int(reply.split(b" ")[1]) if reply.startswith(b"HTTP/1.1 ") else 0


def test_bodies_on_routes_that_take_none(fuzzed: Fuzzed) -> None:
    f = fuzzed
    body = b"x" * 1_000_000
    for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
        for path in (
            "/v1/stats",
            "/arks",
            "/.well-known/ark",
            "/v1/token",
            "/v1/token/write",
            f"/v1/reconstructions/{f.file}",
            f"/v1/chunks/default/{f.file}",
            f.xorb_url,
            f"/{ARK}",
            f"/{ARK}/data/f%2D1%2Ebin",
            "/nothing/here",
        ):
            f.send(method, path, headers=READ, content=body)


def body(size: int) -> Iterator[bytes]:
    """size zero bytes, a MiB at a time."""
    block = bytes(1 << 20)
    for start in range(0, size, len(block)):
        yield block[: size - start]


@pytest.mark.slow
def test_unauthenticated_bodies_of_growing_size(fuzzed: Fuzzed) -> None:
    f = fuzzed
    routes = [
        ("POST", "/v1/shards"),
        ("POST", f"/v1/xorbs/default/{f.file}"),
        ("POST", "/v1/telemetry"),
        ("PUT", f"/{ARK}"),
    ]
    for size in (1_000, 1_000_000, 16_000_000, 256_000_000):
        for method, path in routes:
            for headers in ({}, READ):  # no token; a token without write scope
                # streamed: chunked, then with its Content-Length
                f.send(method, path, headers=headers, content=body(size))
                sized = {**headers, "Content-Length": str(size)}
                f.send(method, path, headers=sized, content=body(size))
    print(f"max server RSS {f.max_rss / 2**20:.0f} MiB")
