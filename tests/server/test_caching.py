"""What caches and proxies need of `arkfs serve` (#28): strong ETags, a year's immutable
Cache-Control on content named by version or hash, a short one (and Content-Location) on
the latest, 304 for conditional requests, and the same signed xorb URL for every reader
within a signing window."""

import random
from collections.abc import Iterator

import httpx
import pytest

from tests.support.archive import publish
from tests.support.server import arkfs_server

ARK = "ark:12345/x6cached"
YEAR = "public, max-age=31536000, immutable"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, bytes]]:
    root = tmp_path_factory.mktemp("caching")
    (root / "tokens").write_text("writer write\n")
    tree = root / "tree"
    tree.mkdir()
    data = random.Random(7).randbytes(300_000)
    (tree / "f.bin").write_bytes(data)
    args = ("--open-read", "--tokens", str(root / "tokens"))
    with arkfs_server(root / "store", *args) as (url, _proc):
        publish(tree, ARK, "--server", url, "--token", "writer")
        yield url, data


def test_versioned_file_is_immutable_and_answers_304(served: tuple[str, bytes]) -> None:
    url, data = served
    r = httpx.get(f"{url}/{ARK}/@v1/f.bin")
    assert r.content == data and r.headers["cache-control"] == YEAR
    etag, modified = r.headers["etag"], r.headers["last-modified"]
    assert etag.startswith('"') and not etag.startswith("W/")
    for condition in ({"If-None-Match": etag}, {"If-Modified-Since": modified}):
        again = httpx.get(f"{url}/{ARK}/@v1/f.bin", headers=condition)
        assert again.status_code == 304 and again.content == b"", condition
        assert again.headers["etag"] == etag and again.headers["cache-control"] == YEAR
    other = httpx.get(f"{url}/{ARK}/@v1/f.bin", headers={"If-None-Match": '"other"'})
    assert other.status_code == 200 and other.content == data


def test_latest_is_short_lived_and_names_its_version(served: tuple[str, bytes]) -> None:
    url, _ = served
    r = httpx.get(f"{url}/{ARK}/f.bin")
    assert r.headers["cache-control"] == "public, max-age=60"
    assert r.headers["content-location"] == f"/{ARK}/@v1/f%2Ebin"  # ARK-safe spelling
    again = httpx.get(f"{url}/{ARK}/f.bin", headers={"If-None-Match": r.headers["etag"]})
    assert again.status_code == 304
    assert again.headers["content-location"] == r.headers["content-location"]


def test_xorb_urls_are_stable_immutable_and_answer_304(served: tuple[str, bytes]) -> None:
    url, _ = served
    manifest = httpx.get(f"{url}/{ARK}", headers={"Accept": "application/json"}).json()
    (entry,) = [e for e in manifest["entries"] if e["path"] == "f.bin"]
    route = f"{url}/v1/reconstructions/{entry['xet_hash']}"
    first, second = (httpx.get(route).json()["fetch_info"] for _ in range(2))
    assert first == second  # one URL per xorb for every reader within a signing window
    fetch = next(iter(first.values()))[0]
    xorb = httpx.get(fetch["url"])
    assert xorb.status_code == 200 and xorb.headers["cache-control"] == YEAR
    cond = httpx.get(fetch["url"], headers={"If-None-Match": xorb.headers["etag"]})
    assert cond.status_code == 304 and cond.content == b""
    head = httpx.head(fetch["url"])
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == xorb.headers["content-length"]
    # a Range past the end is refused before a matching ETag is answered
    past = {"If-None-Match": xorb.headers["etag"], "Range": "bytes=999999999-"}
    assert httpx.get(fetch["url"], headers=past).status_code == 416
