"""A short PostgreSQL outage: requests are answered 503 with a Retry-After that fits a
client's 10 s deadline, and a publish started during a 5 s stop rides it out."""

import random
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from arkfs.xet.hashing import chunk_hash, hash_to_string
from tests.support.archive import PERSISTENCE, WHAT, WHO
from tests.support.cli import ARKFS
from tests.support.server import Server
from tests.support.services import PostgreSQL, SeaweedFS, new_place

pytestmark = pytest.mark.slow
CLIENT_DEADLINE = 10.0  # seconds arkfs (and hf_xet) retry a read within
OUTAGE = 5.0


def test_publish_rides_out_a_five_second_database_stop(
    seaweedfs: SeaweedFS, own_postgresql: PostgreSQL, tmp_path: Path
) -> None:
    place = new_place(seaweedfs, own_postgresql)
    (tmp_path / "tokens").write_text("writer write\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    rng = random.Random(5)
    for i in range(20):
        (tree / f"f{i}.bin").write_bytes(rng.randbytes(200_000))
    extra = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(place.location, *place.serve_args()[2:], *extra) as server:
        own_postgresql.stop()
        try:
            chunk = hash_to_string(chunk_hash(b"any chunk"))
            reply = httpx.get(f"{server.url}/v1/chunks/default/{chunk}", timeout=30)
            assert reply.status_code == 503, reply.text
            pause = float(reply.headers["retry-after"])
            assert 0 < pause <= CLIENT_DEADLINE / 4  # room for retries within the deadline
            argv = [
                ARKFS, "publish", str(tree), "--ark", "ark:12345/x6outage", "--server", server.url,
                "--token", "writer", "--who", WHO, "--what", WHAT, "--persistence", PERSISTENCE,
            ]  # fmt: skip
            publish = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(OUTAGE)
        finally:
            own_postgresql.start()
        _, err = publish.communicate(timeout=300)
        assert publish.returncode == 0, err.decode()
        info = httpx.get(f"{server.url}/ark:12345/x6outage/@v1?info", timeout=30)
        assert info.status_code == 200, info.text
