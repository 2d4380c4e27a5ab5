"""Validators on every content route (#28), beyond the file bytes: records (?info), landing
pages and listings under @vN are immutable, the latest short-lived with Content-Location,
reconstructions and footer reads revalidate, and If-None-Match / If-Modified-Since are
answered 304."""

import random
from collections.abc import Iterator

import httpx
import pytest

from arkfs.xet.reconstruction import (
    FOOTERS_HEADER,
    FOOTERS_HELD_HEADER,
    Reconstruction,
    held_header,
)
from tests.support.archive import publish
from tests.support.server import arkfs_server

ARK = "ark:12345/x6routes"
YEAR = "public, max-age=31536000, immutable"
SHORT = "public, max-age=60"
HTML = {"Accept": "text/html"}
JSON = {"Accept": "application/json"}
TEXT = {"Accept": "text/plain"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("routes")
    (root / "tokens").write_text("writer write\nreader read\n")
    tree = root / "tree"
    (tree / "d").mkdir(parents=True)
    (tree / "d" / "f.txt").write_text("hello\n" * 100)
    (tree / "top.bin").write_bytes(random.Random(2).randbytes(100_000))
    args = ("--open-read", "--tokens", str(root / "tokens"))
    with arkfs_server(root / "store", *args) as (url, _proc):
        publish(tree, ARK, "--server", url, "--token", "writer")
        yield url


def revalidates(url: str, headers: dict[str, str], cache: str) -> httpx.Response:
    """GET url with headers: a 200 with a strong ETag and Cache-Control cache, answered 304
    (with the same validators, no body) to If-None-Match and to If-Modified-Since, and 200
    to another ETag."""
    r = httpx.get(url, headers=headers)
    assert r.status_code == 200, (url, r.status_code, r.text)
    etag = r.headers["etag"]
    assert etag.startswith('"') and r.headers["cache-control"] == cache, (url, r.headers)
    for condition in ({"If-None-Match": etag}, {"If-Modified-Since": r.headers["last-modified"]}):
        again = httpx.get(url, headers={**headers, **condition})
        assert again.status_code == 304 and again.content == b"", (url, condition)
        assert again.headers["etag"] == etag and again.headers["cache-control"] == cache
    other = httpx.get(url, headers={**headers, "If-None-Match": '"other"'})
    assert other.status_code == 200 and other.content == r.content
    return r


@pytest.mark.parametrize("accept", [TEXT, JSON, HTML], ids=["anvl", "json", "html"])
@pytest.mark.parametrize("path", ["/d", "/d/f.txt"], ids=["dir", "file"])
def test_versioned_records_are_immutable(served: str, path: str, accept: dict[str, str]) -> None:
    revalidates(f"{served}/{ARK}/@v1{path}?info", accept, YEAR)


@pytest.mark.parametrize("accept", [JSON, HTML], ids=["json", "html"])
def test_versioned_listings_and_pages_are_immutable(served: str, accept: dict[str, str]) -> None:
    revalidates(f"{served}/{ARK}/@v1/d", accept, YEAR)


def test_versioned_root_lists_versions_so_is_short_lived(served: str) -> None:
    for accept in (JSON, HTML):
        for query in ("", "?info"):
            revalidates(f"{served}/{ARK}/@v1{query}", accept, SHORT)


@pytest.mark.parametrize("path", ["", "/d", "/d/f.txt?info"], ids=["root", "dir", "info"])
def test_latest_is_short_lived_and_names_its_version(served: str, path: str) -> None:
    r = revalidates(f"{served}/{ARK}{path}", HTML, SHORT)
    assert r.headers["content-location"].startswith(f"/{ARK}/@v1")
    again = httpx.get(f"{served}/{ARK}{path}", headers={**HTML, "If-None-Match": r.headers["etag"]})
    assert again.headers["content-location"] == r.headers["content-location"]


def test_reconstruction_and_footer_revalidate(served: str) -> None:
    manifest = httpx.get(f"{served}/{ARK}", headers=JSON).json()
    (entry,) = [e for e in manifest["entries"] if e["path"] == "top.bin"]
    auth = {"Authorization": "Bearer reader", "Range": "bytes=0-99999"}
    route = f"{served}/v1/reconstructions/{entry['xet_hash']}"
    r = httpx.get(route, headers=auth)
    assert r.status_code == 200 and r.headers["cache-control"] == "private, no-cache"
    again = httpx.get(route, headers={**auth, "If-None-Match": r.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    fetch = next(iter(r.json()["fetch_info"].values()))[0]
    footer = httpx.get(fetch["url"], headers={"Range": "bytes=-4"})  # how readers find it
    assert footer.status_code == 206 and footer.headers["cache-control"] == YEAR
    cond = httpx.get(
        fetch["url"], headers={"Range": "bytes=-4", "If-None-Match": footer.headers["etag"]}
    )
    assert cond.status_code == 304


def test_reconstruction_leaves_out_the_footers_the_client_holds(served: str) -> None:
    manifest = httpx.get(f"{served}/{ARK}", headers=JSON).json()
    (entry,) = [e for e in manifest["entries"] if e["path"] == "top.bin"]
    route = f"{served}/v1/reconstructions/{entry['xet_hash']}"
    ask = {"Authorization": "Bearer reader", FOOTERS_HEADER: "1"}
    full = Reconstruction.from_json(httpx.get(route, headers=ask).json())
    assert full.footers  # asked for, every footer comes
    held = {**ask, FOOTERS_HELD_HEADER: held_header(full.footers)}
    lean = httpx.get(route, headers=held)
    assert Reconstruction.from_json(lean.json()).footers == {}
    assert len(lean.content) < len(httpx.get(route, headers=ask).content)
    other = {**ask, FOOTERS_HELD_HEADER: "0123456789abcdef"}  # some other xorb's
    assert Reconstruction.from_json(httpx.get(route, headers=other).json()).footers == full.footers
