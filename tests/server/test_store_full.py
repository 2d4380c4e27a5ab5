"""A full store through a real `arkfs serve` (its store on a 2 MiB tmpfs): 507 with a JSON
error, and a publisher that says so in one line at once, never retrying (#23 item 13)."""

import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.xet.hashing import chunk_hash, hash_to_string
from arkfs.xet.xorb import serialize_xorb
from tests.support.cli import run_arkfs
from tests.support.server import arkfs_server

ARK = "ark:b5072/f9ll"
CHUNK = 64 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted at the end."""
    where = tmp_path / "small"
    where.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def big_xorb(seed: int) -> tuple[str, bytes]:
    """A serialized xorb of 3 MiB of random chunks: more than the small disk holds."""
    rng = random.Random(seed)
    chunks = [rng.randbytes(CHUNK) for _ in range(48)]
    x = serialize_xorb([(chunk_hash(c), c) for c in chunks])
    return hash_to_string(x.hash), x.data


def test_a_full_store_is_507_and_the_publisher_says_so_without_retrying(
    tmp_path: Path, small_disk: Path
) -> None:
    (tmp_path / "tokens").write_text("w write\n")
    src = tmp_path / "src"
    src.mkdir()
    (src / "big.bin").write_bytes(random.Random(7).randbytes(3 * 1024 * 1024))
    access = tmp_path / "access.log"
    serve = ("--tokens", str(tmp_path / "tokens"), "--access-log", str(access))
    with arkfs_server(small_disk / "store", *serve) as (url, _):
        name, data = big_xorb(1)
        r = httpx.post(
            f"{url}/v1/xorbs/default/{name}", content=data, headers={"Authorization": "Bearer w"}
        )
        assert r.status_code == 507, r.text
        assert "the server's store is full" in r.json()["error"]
        done = run_arkfs("publish", "-q", str(src), "--ark", ARK, "--server", url, "--token", "w")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "the server's store is full" in lines[0], done.stderr
    refused = [line for line in access.read_text().splitlines() if '" 507 ' in line]
    assert len(refused) == 2, refused  # one for the POST above, one for the publisher's xorb
