"""Pre-signed S3 xorb URLs a site cache can hit (#28): every reader within a signing window
gets the same URL, and --s3-public-endpoint names S3 as readers reach it."""

import random
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.archive import publish
from tests.support.server import Server
from tests.support.services import PostgreSQL, SeaweedFS, new_place

pytestmark = pytest.mark.slow
ARK = "ark:12345/x6signed"


def fetch_urls(server: str, path: str) -> list[str]:
    """The xorb URLs of one v1 reconstruction of the file at path of ARK."""
    manifest = httpx.get(f"{server}/{ARK}", headers={"Accept": "application/json"}).json()
    (entry,) = [e for e in manifest["entries"] if e["path"] == path]
    reply = httpx.get(f"{server}/v1/reconstructions/{entry['xet_hash']}")
    assert reply.status_code == 200, reply.text
    return [f["url"] for infos in reply.json()["fetch_info"].values() for f in infos]


def one_window(server: str) -> tuple[list[str], list[str]]:
    """Two reconstructions of f.bin a second apart in one signing window (300 s for the
    default 900 s ttl), waiting out a window's last seconds so no boundary falls between."""
    if time.time() % 300 > 285:
        time.sleep(16)
    first = fetch_urls(server, "f.bin")
    time.sleep(1.1)  # another second: a URL signed at "now" would differ
    return first, fetch_urls(server, "f.bin")


@pytest.mark.parametrize("public", [False, True])
def test_presigned_urls_repeat_within_a_window(
    tmp_path: Path, seaweedfs: SeaweedFS, postgresql: PostgreSQL, public: bool
) -> None:
    place = new_place(seaweedfs, postgresql)
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(3).randbytes(200_000)
    (tree / "f.bin").write_bytes(data)
    # the same S3 by another name: readers' URLs must be signed for the name they use
    elsewhere = seaweedfs.endpoint.replace("127.0.0.1", "localhost")
    extra = ("--s3-public-endpoint", elsewhere) if public else ()
    args = (*place.serve_args()[2:], *extra, "--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(place.location, *args) as server:
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        first, second = one_window(server.url)
        bucket = place.location[len("s3://") :].split("/", 1)[0]
        sizes = {f"/{bucket}/{k}": n for k, n in seaweedfs.objects(bucket).items()}
        assert first and first == second
        for url in first:
            assert url.startswith((elsewhere if public else seaweedfs.endpoint) + "/")
            query = parse_qs(urlsplit(url).query)
            assert int(query["X-Amz-Expires"][0]) >= 900  # the promised ttl at least
            got = httpx.get(url)
            assert got.status_code == 200 and len(got.content) == sizes[urlsplit(url).path]
            assert "immutable" in got.headers["cache-control"]
