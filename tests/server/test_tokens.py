"""Derived tokens: issued by GET /v1/token, accepted until they expire, never logged."""

import calendar
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from arkfs.server.auth import AuthError, Authorizer, Scope, TokensFileError, parse_tokens
from arkfs.server.tokens import TokenError, TokenIssuer, derive_key
from tests.support.cli import run_arkfs
from tests.support.hfxet import download_range, upload_files
from tests.support.server import arkfs_server

KEY = bytes(range(32))


def test_issued_tokens_check_until_they_expire() -> None:
    issuer = TokenIssuer(ttl=60)
    token, exp = issuer.issue("write", now=1000)
    assert exp == 1060 and token.startswith("arkfs1.write.1060.")
    assert issuer.check(token, now=1059) == "write"
    with pytest.raises(TokenError, match="expired token"):
        issuer.check(token, now=1060)


def test_altered_or_foreign_tokens_are_refused() -> None:
    issuer = TokenIssuer()
    token, _ = issuer.issue("read")
    upgraded = token.replace(".read.", ".write.")
    later = token.split(".")
    later[2] = str(int(later[2]) + 3600)
    foreign = TokenIssuer().issue("read")[0]
    non_ascii = token[:-1] + "é"
    flipped = token[:-1] + ("1" if token[-1] == "0" else "0")
    for bad in (upgraded, ".".join(later), foreign, flipped, non_ascii):
        with pytest.raises(TokenError, match="not signed by this server"):
            issuer.check(bad)
    huge = "9" * 5000  # Python refuses int() of more than 4,300 digits
    for bad in ("arkfs1.read", "arkfs1.admin.1.00", "arkfs1.read.x.y.z", f"arkfs1.read.{huge}.00"):
        with pytest.raises(TokenError, match="malformed"):
            issuer.check(bad)


def test_authorizer_accepts_derived_tokens_for_their_scope() -> None:
    auth = Authorizer({"w": Scope.WRITE})
    read, _ = auth.issuer.issue("read")
    assert auth.require(f"Bearer {read}", Scope.READ) == read
    with pytest.raises(AuthError) as info:
        auth.require(f"Bearer {read}", Scope.WRITE)
    assert info.value.status == 403
    with pytest.raises(AuthError) as info:
        auth.require(f"Bearer {read}", Scope.READ, derived=False)
    assert info.value.status == 403
    with pytest.raises(AuthError) as info:
        auth.require("Bearer wé", Scope.READ)
    assert info.value.status == 401
    with pytest.raises(TokensFileError, match="reserved"):
        parse_tokens("arkfs1.mine read\n")


@dataclass
class Server:
    url: str
    data: Path  # a file to upload


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("tokens")
    (root / "tokens").write_text("r read\nw write\n")
    (root / "key").write_bytes(KEY)
    data = root / "data"
    data.write_bytes(os.urandom(100_000))
    args = ("--tokens", str(root / "tokens"), "--key-file", str(root / "key"))
    with arkfs_server(root / "store", *args) as (url, _):
        yield Server(url, data)


def get_token(url: str, own: str, scope: str | None = None) -> httpx.Response:
    path = "/v1/token" + (f"/{scope}" if scope else "")
    return httpx.get(url + path, headers={"Authorization": f"Bearer {own}"})


def test_token_route_reply_shape(server: Server) -> None:
    before = int(time.time())
    r = get_token(server.url, "r")
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    body = r.json()
    assert set(body) == {"accessToken", "exp", "casUrl"}
    assert body["casUrl"] == server.url and not body["casUrl"].endswith("/")
    assert isinstance(body["exp"], int) and before + 3600 <= body["exp"]
    assert body["accessToken"].startswith("arkfs1.read.")
    assert get_token(server.url, "r", "read").json()["accessToken"].startswith("arkfs1.read.")
    assert get_token(server.url, "w", "write").json()["accessToken"].startswith("arkfs1.write.")


def test_token_route_refusals(server: Server) -> None:
    assert httpx.get(server.url + "/v1/token").status_code == 401
    assert get_token(server.url, "nope").status_code == 401
    r = get_token(server.url, "r", "write")
    assert r.status_code == 403 and "write needed" in r.json()["error"]
    assert get_token(server.url, "w", "admin").status_code == 400
    derived = get_token(server.url, "w", "write").json()["accessToken"]
    assert get_token(server.url, derived, "read").status_code == 403


def test_derived_tokens_work_on_cas_routes(server: Server) -> None:
    write = get_token(server.url, "w", "write").json()["accessToken"]
    read = get_token(server.url, "r").json()["accessToken"]
    [info] = upload_files(server.url, [server.data], token=write)
    r = httpx.get(
        f"{server.url}/v1/reconstructions/{info.hash}",
        headers={"Authorization": f"Bearer {read}"},
    )
    assert r.status_code == 200
    got = download_range(server.url, info.hash, info.file_size, 10, 5000, token=read)
    assert got == server.data.read_bytes()[10:5000]
    r = httpx.post(
        f"{server.url}/v1/shards", content=b"x", headers={"Authorization": f"Bearer {read}"}
    )
    assert r.status_code == 403


def test_expired_and_tampered_tokens_are_401(server: Server) -> None:
    issuer = TokenIssuer(derive_key(KEY, "tokens"))  # the server's own key, from --key-file
    expired, _ = issuer.issue("read", now=time.time() - 2 * issuer.ttl)
    fresh, _ = issuer.issue("read")
    tampered = fresh[:-1] + ("1" if fresh[-1] == "0" else "0")
    for token, status in {fresh: 200, expired: 401, tampered: 401}.items():
        r = httpx.get(f"{server.url}/arks", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == status, r.text
        if status == 401:
            assert r.headers["www-authenticate"] == "Bearer"
    r = httpx.get(f"{server.url}/arks", headers={"Authorization": f"Bearer {expired}"})
    assert r.text == "expired token: ask /v1/token for a new one\n"


def test_tokens_never_reach_the_log(tmp_path: Path) -> None:
    """Good, bad and derived tokens on NMA and CAS routes leave no trace in the output."""
    (tmp_path / "tokens").write_text("secret-reader read\n")
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens")) as (url, proc):
        token = get_token(url, "secret-reader").json()["accessToken"]
        for t in (token, token + "x", "secret-reader"):
            httpx.get(f"{url}/arks", headers={"Authorization": f"Bearer {t}"})
            httpx.get(
                f"{url}/v1/reconstructions/{'0' * 64}", headers={"Authorization": f"Bearer {t}"}
            )
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=10)
        log = proc.stderr.read() + proc.stdout.read()  # type: ignore[union-attr]
    assert "Running on" in log  # the log was captured
    assert token[-20:] not in log and "secret-reader" not in log


def test_short_key_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "key").write_bytes(b"too short")
    r = run_arkfs("serve", "--store", str(tmp_path / "s"), "--key-file", str(tmp_path / "key"))
    assert r.returncode == 2
    assert "holds 9 bytes; use at least 32" in r.stderr


def test_url_ttl_sets_the_lifetime_of_signed_xorb_urls(tmp_path: Path) -> None:
    (tmp_path / "tokens").write_text("w write\n")
    data = tmp_path / "data"
    data.write_bytes(os.urandom(100_000))
    args = ("--tokens", str(tmp_path / "tokens"), "--open-read", "--url-ttl", "7200")
    with arkfs_server(tmp_path / "store", *args) as (url, _):
        [info] = upload_files(url, [data], token="w")
        before = time.time()
        r = httpx.get(f"{url}/v1/reconstructions/{info.hash}")
        [[fetch]] = r.json()["fetch_info"].values()
        expires = url_expiry(fetch["url"])
        # valid for the ttl at least, and at most a signing window (a third) more
        assert before + 7200 <= expires <= time.time() + 7200 + 2400
        assert download_range(url, info.hash, info.file_size, 0, 100_000) == data.read_bytes()
    for bad in ("59", "453601"):
        done = run_arkfs("serve", "--store", str(tmp_path / "s"), "--url-ttl", bad)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "--url-ttl" in done.stderr


def url_expiry(url: str) -> int:
    """When a signed xorb URL expires: serve's own (expires=) or a bucket's (SigV4, on the
    scaled store: tests/scale/test_unchanged.py)."""
    query = parse_qs(urlsplit(url).query)
    if "expires" in query:
        return int(query["expires"][0])
    signed = calendar.timegm(time.strptime(query["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ"))
    return signed + int(query["X-Amz-Expires"][0])
