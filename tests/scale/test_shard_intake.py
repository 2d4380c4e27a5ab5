"""Shard intake in bounded time on S3 + PostgreSQL: archives whose shards once took the
server longer than the client waits (one block repeated, 100 MiB of zeros, 2,000 small
files) publish, again and again; a shard POST waits a bounded time for its check, and a
retried one joins it, is answered the same and registered once."""

import random
import re
import time
from pathlib import Path

import httpx
import pytest

from arkfs.store.scaled import ScaledStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.shard import FileBlock, Shard, serialize_upload
from tests.store.factory import file_of, random_xorb
from tests.support.archive import publish
from tests.support.intake_shapes import Shape, one_block, small_files, zeros
from tests.support.server import Server
from tests.support.services import ScaledPlace

pytestmark = pytest.mark.slow  # SeaweedFS and PostgreSQL start once per session
ROUNDS = 3  # publishes of each tree, each a new version with new bytes
_SHARD_SECONDS = re.compile(
    r'^arkfs_http_request_duration_seconds_(sum|count)\{route="/v1/shards"\} (\S+)$', re.M
)


def shard_posts(server: Server) -> tuple[float, int]:
    """The seconds spent answering shard POSTs so far, and how many there were."""
    text = httpx.get(f"{server.url}/metrics", timeout=30).text
    found = {kind: float(value) for kind, value in _SHARD_SECONDS.findall(text)}
    return found.get("sum", 0.0), int(found.get("count", 0))


@pytest.mark.parametrize("make", [zeros, one_block, small_files], ids=lambda f: f.__name__)
def test_shapes_that_outlasted_the_client_publish_every_time(
    make: Shape, scaled_place: ScaledPlace, tmp_path: Path
) -> None:
    (tmp_path / "tokens").write_text("writer write\n")
    extra = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    ark = "ark:12345/x6intake"
    with Server(scaled_place.location, *scaled_place.serve_args()[2:], *extra) as server:
        for salt in range(ROUNDS):
            tree = tmp_path / f"tree{salt}"
            tree.mkdir()
            make(tree, salt)
            before = shard_posts(server)
            publish(tree, ark, "--server", server.url, "--token", "writer")
            after = shard_posts(server)
            seconds, count = after[0] - before[0], after[1] - before[1]
            print(f"{make.__name__} round {salt}: {count} shard POSTs, {seconds:.2f} s")
        reply = httpx.get(f"{server.url}/{ark}/@v{ROUNDS}?info", timeout=30)
        assert reply.status_code == 200, reply.text


def test_a_shard_post_waits_a_bounded_time_and_a_retry_joins_its_check(
    scaled_place: ScaledPlace, tmp_path: Path
) -> None:
    (tmp_path / "tokens").write_text("writer write\n")
    write = {"Authorization": "Bearer writer"}
    rng = random.Random(28)
    xorbs = [random_xorb(rng, chunks=8) for _ in range(2)]
    blocks = []
    for x in xorbs:
        record = file_of([x])
        blocks.append(FileBlock(record.file_hash, record.terms, sha256=record.sha256))
    first, second = (serialize_upload(Shard(files=(b,))) for b in blocks)
    extra = ("--tokens", str(tmp_path / "tokens"))
    with Server(scaled_place.location, *scaled_place.serve_args()[2:], *extra) as server:
        for x in xorbs:
            url = f"{server.url}/v1/xorbs/default/{hash_to_string(x.hash)}"
            assert httpx.post(url, content=x.data, headers=write, timeout=30).status_code == 200

        def post(shard: bytes, prefer: str | None) -> httpx.Response:
            headers = write | ({"Prefer": prefer} if prefer else {})
            return httpx.post(f"{server.url}/v1/shards", content=shard, headers=headers, timeout=30)

        # A client that will not wait is told to come back (hf_xet: 503 and Retry-After) ...
        busy = post(first, "wait=0")
        assert busy.status_code == 503 and busy.headers["retry-after"] == "1", busy.text
        assert "still being checked" in busy.json()["error"]
        # ... or, asking respond-async, where to poll the check under way
        pending = post(second, "respond-async, wait=0")
        assert pending.status_code == 202 and pending.json()["pending"] is True, pending.text
        where = pending.headers["location"]
        assert where.startswith("/v1/shard-intakes/")
        for _ in range(600):
            polled = httpx.get(server.url + where, headers=write, timeout=30)
            if polled.status_code != 202:
                break
            time.sleep(0.1)
        assert polled.status_code == 200 and polled.json() == {"result": 1}, polled.text
        # a retry after the check is told the shard is there (XET Upload Shard's result 0, as
        # the embedded store answers a second upload), and each shard is registered once
        for shard in (first, second):
            for prefer in (None, "respond-async"):
                again = post(shard, prefer)
                assert again.status_code == 200 and again.json() == {"result": 0}, again.text
    p = scaled_place
    with ScaledStore.open(p.location, p.endpoint, p.index) as store:
        assert store.stats().shards == 2 and store.stats().files == 2
