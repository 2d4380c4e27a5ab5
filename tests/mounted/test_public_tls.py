"""`arkfs serve` behind real nginx terminating TLS under a path prefix, with a test CA:
every absolute URL the server writes is the public https one, and curl, hf_xet, publish
and the mount all work through it (issue 27, public base URL)."""

import os
import ssl
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.support.cli import ARKFS
from tests.support.hfxet import download_file, upload_files
from tests.support.mount import arkfs_mount
from tests.support.server import Server, arkfs_server
from tests.support.tls import TlsFiles, make_ca, nginx_front

ARK = "ark:99999/tls7q"
PREFIX = "/arks"
TOKENS = "writer write\nreader read\n"
CONTENT = {"a.txt": b"alpha over https\n", "sub/b.bin": bytes(range(256)) * 300}


@dataclass(frozen=True)
class Front:
    public: str  # https://127.0.0.1:PORT/arks
    tls: TlsFiles


def _tree(root: Path) -> Path:
    for name, data in CONTENT.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


@pytest.fixture(scope="module", params=["forwarded", "base-url"])
def front(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Front]:
    """The server behind nginx, told its public URL by X-Forwarded-* or by --base-url; ARK
    published over https with the CA from --ca-file."""
    root = tmp_path_factory.mktemp("tls")
    tls = make_ca(root / "ca")
    (root / "tokens").write_text(TOKENS)
    tokens = ("--tokens", str(root / "tokens"))
    if request.param == "forwarded":
        trusting = ("--forwarded-allow-ips", "127.0.0.1")
        with (
            arkfs_server(root / "store", *tokens, *trusting) as (url, _),
            nginx_front(root, tls, url, PREFIX) as public,
        ):
            yield _published(Front(public, tls), root)
    else:
        # The public URL is nginx's: start nginx first, then the server told that URL.
        server = Server(root / "store", *tokens)
        with nginx_front(root, tls, server.url, PREFIX) as public:
            server.extra = (*tokens, "--base-url", public)
            with server:
                yield _published(Front(public, tls), root)


def _published(front: Front, root: Path) -> Front:
    tree = _tree(root / "tree")
    done = subprocess.run(
        [ARKFS, "--ca-file", str(front.tls.ca), "publish", str(tree), "--ark", ARK,
         "--server", front.public, "--token", "writer", "--who", "W", "--what", "T"],
        capture_output=True, text=True, timeout=300,
        env={k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return front


def _get(front: Front, path: str, **headers: str) -> httpx.Response:
    headers.setdefault("Authorization", "Bearer reader")
    with httpx.Client(verify=ssl.create_default_context(cafile=front.tls.ca), timeout=60) as client:
        return client.get(f"{front.public}/{path}", headers=headers)


def test_every_absolute_url_is_the_public_https_one(front: Front) -> None:
    manifest = _get(front, ARK, Accept="application/json").json()
    assert manifest["cas_url"] == front.public
    assert manifest["token_url"] == front.public + "/v1/token"
    file = _get(front, f"{ARK}/a.txt")
    assert file.content == CONTENT["a.txt"]
    assert f"<{front.public}/{ARK}" in file.headers["Link"]
    assert file.headers["Content-Location"].startswith(PREFIX + "/" + ARK + "/@v1")
    page = _get(front, ARK, Accept="text/html").text
    assert f"{front.public}/{ARK}" in page and "http://" not in page.replace("http://www.w3", "")
    assert _get(front, ".well-known/ark").text == PREFIX + "/\n"
    token = _get(front, "v1/token/read").json()
    assert token["casUrl"] == front.public
    entry = next(e for e in manifest["entries"] if e["path"] == "a.txt")
    rec = _get(front, f"v2/reconstructions/{entry['xet_hash']}").json()
    urls = [loc["url"] for locs in rec["xorbs"].values() for loc in locs]
    assert urls and all(u.startswith(front.public + "/v1/xorb-data/") for u in urls)


def test_curl_reads_over_https_with_the_test_ca(front: Front, tmp_path: Path) -> None:
    out = tmp_path / "b.bin"
    done = subprocess.run(
        ["curl", "--fail", "--silent", "--show-error", "--cacert", str(front.tls.ca),
         "-H", "Authorization: Bearer reader", "-o", str(out), f"{front.public}/{ARK}/sub/b.bin"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == CONTENT["sub/b.bin"]


def test_hf_xet_uploads_and_downloads_over_https(
    front: Front, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(front.tls.ca))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    data = os.urandom(300_000)
    (tmp_path / "up.bin").write_bytes(data)
    (up,) = upload_files(front.public, [tmp_path / "up.bin"], token="writer")
    download_file(front.public, up.hash, up.file_size, tmp_path / "down.bin", token="reader")
    assert (tmp_path / "down.bin").read_bytes() == data


def test_the_mount_reads_over_https(
    front: Front, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(front.tls.ca))
    args = ("--server", front.public, "--token", "reader", "--cache-dir", str(tmp_path / "c"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        for name, data in CONTENT.items():
            assert (m.path / ARK / name).read_bytes() == data


@pytest.mark.parametrize("allow", [(), ("--forwarded-allow-ips", "10.0.0.0/8")])
def test_forwarded_headers_from_an_untrusted_peer_are_ignored(
    tmp_path: Path, allow: tuple[str, ...]
) -> None:
    with arkfs_server(tmp_path / "store", "--open-read", *allow) as (url, _):
        forged = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}
        token = httpx.get(f"{url}/.well-known/ark", headers=forged | {"X-Forwarded-Prefix": "/x"})
        assert token.text == "/\n"
        page = httpx.get(f"{url}/", headers=forged).text
        assert "evil.example" not in page and url in page


def test_a_bad_base_url_is_refused_in_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [ARKFS, "serve", "--store", str(tmp_path / "s"), "--base-url", "ftp://x/", "--open-read"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "--base-url" in done.stderr
