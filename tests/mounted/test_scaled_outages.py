"""When the bucket or the database is unreachable: one clear line at start-up, 503 with
Retry-After per request, EIO from the mount in bounded time, and recovery once it is back."""

import errno
import random
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from tests.support.archive import MIB, publish
from tests.support.cli import run_arkfs
from tests.support.hfxet import upload_files
from tests.support.mount import arkfs_mount, pread_in_child
from tests.support.server import Server, free_port
from tests.support.services import PostgreSQL, ScaledPlace, SeaweedFS, new_place

pytestmark = pytest.mark.slow
BACK_WITHIN = 60.0  # seconds from a restart until requests succeed again
ARK = "ark:12345/x6outage"


def wait_until(ok: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BACK_WITHIN
    while not ok():
        assert time.monotonic() < deadline, f"{what} not back within {BACK_WITHIN} s"
        time.sleep(0.5)


def test_serve_says_in_one_line_what_it_cannot_reach(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> None:
    place = new_place(seaweedfs, postgresql)
    nowhere = f"http://127.0.0.1:{free_port()}"
    weed = ("--s3-endpoint", seaweedfs.endpoint)
    dead_index = f"postgresql://arkfs@127.0.0.1:{free_port()}/x"
    no_database = postgresql.url("no_such_database")
    cases = [
        (("--store", place.location, *weed), 2, "needs --index postgresql://"),
        (
            ("--store", place.location, "--s3-endpoint", nowhere, "--index", place.index),
            1,
            f"the S3 endpoint at {nowhere} is unreachable",
        ),
        (
            ("--store", "s3://no-such-bucket", *weed, "--index", place.index),
            1,
            "there is no bucket no-such-bucket",
        ),
        (
            ("--store", place.location, *weed, "--index", dead_index),
            1,
            "that PostgreSQL is up",
        ),
        (  # PostgreSQL answers at once: said at once, not after the pool's retries
            ("--store", place.location, *weed, "--index", no_database),
            1,
            'database "no_such_database" does not exist',
        ),
    ]
    for args, code, message in cases:
        done = run_arkfs("serve", *args, "--port", "0", "--open-read", timeout=60)
        assert done.returncode == code, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and message in lines[0], done.stderr
        assert "Traceback" not in done.stderr


def serve_options(place: ScaledPlace, tmp_path: Path) -> tuple[str, ...]:
    """The options of an open-read server on place that takes writes from `writer`."""
    (tmp_path / "tokens").write_text("writer write\n")
    return (*place.serve_args()[2:], "--open-read", "--tokens", str(tmp_path / "tokens"))


def test_database_down_is_503_with_retry_after_then_recovers(
    seaweedfs: SeaweedFS, own_postgresql: PostgreSQL, tmp_path: Path
) -> None:
    place = new_place(seaweedfs, own_postgresql)
    data = tmp_path / "data.bin"
    data.write_bytes(random.Random(1).randbytes(100_000))
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "f.txt").write_text("kept\n")
    with Server(place.location, *serve_options(place, tmp_path)) as server:
        (meta,) = upload_files(server.url, [data], token="writer")
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        cas = f"{server.url}/v2/reconstructions/{meta.hash}"
        nma = f"{server.url}/{ARK}?info"
        assert httpx.get(cas, timeout=30).status_code == 200
        own_postgresql.stop()
        for url, face in ((cas, "json"), (nma, "text")):
            started = time.monotonic()
            reply = httpx.get(url, timeout=60)
            assert reply.status_code == 503, reply.text
            assert reply.headers["retry-after"].isdigit()
            text = reply.json()["error"] if face == "json" else reply.text
            assert "unavailable" in text and "retry" in text
            assert time.monotonic() - started < 30  # bounded: never a hang
        own_postgresql.start()
        wait_until(lambda: httpx.get(cas, timeout=30).status_code == 200, "the CAS")
        assert httpx.get(nma, timeout=30).status_code == 200


def test_bucket_down_mid_read_is_eio_then_recovers(
    own_seaweedfs: SeaweedFS, postgresql: PostgreSQL, tmp_path: Path
) -> None:
    place = new_place(own_seaweedfs, postgresql)
    tree = tmp_path / "tree"
    tree.mkdir()
    content = random.Random(2).randbytes(24 * MIB)
    (tree / "big.bin").write_bytes(content)
    with Server(place.location, *serve_options(place, tmp_path)) as server:
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        args = ("--server", server.url, "--cache-dir", str(tmp_path / "cache"))
        with arkfs_mount(tmp_path / "mnt", *args) as m:
            path = m.path / ARK / "big.bin"
            assert pread_in_child(path, 0, MIB) == content[:MIB]
            own_seaweedfs.stop()
            far = 20 * MIB  # not fetched yet, nor prefetched
            assert pread_in_child(path, far, MIB, timeout=120) == errno.EIO
            own_seaweedfs.start()
            wait_until(
                lambda: pread_in_child(path, far, MIB) == content[far : far + MIB], "the bucket"
            )
