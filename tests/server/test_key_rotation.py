"""Key rotation (#28): `serve --key-file NEW --key-file OLD` signs with NEW and accepts
tokens and signed URLs of either, so replicas can move to a new key one by one."""

import os
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from arkfs.server.signing import UrlSigner
from arkfs.server.tokens import TokenIssuer, derive_key
from tests.support.server import arkfs_server
from tests.support.services import PostgreSQL, SeaweedFS, new_place


def test_first_key_signs_and_every_key_is_accepted(tmp_path: Path) -> None:
    new, old, other = (tmp_path / n for n in ("new.key", "old.key", "other.key"))
    for i, path in enumerate((new, old, other)):
        path.write_bytes(bytes([i + 1]) * 32)
    (tmp_path / "tokens").write_text("reader read\n")
    issued = {
        path: TokenIssuer(derive_key(path.read_bytes(), "tokens")).issue("read")[0]
        for path in (new, old, other)
    }
    url_of = {  # a signed xorb URL's query, as a replica on each key signs it
        path: UrlSigner(derive_key(path.read_bytes(), "xorb urls")).sign("http://x", "0" * 64)[0]
        for path in (new, old, other)
    }
    keys = ("--key-file", str(new), "--key-file", str(old))
    with arkfs_server(tmp_path / "store", "--tokens", str(tmp_path / "tokens"), *keys) as (
        url,
        _proc,
    ):
        for path, status in ((new, 200), (old, 200), (other, 401)):
            headers = {"Authorization": f"Bearer {issued[path]}"}
            assert httpx.get(f"{url}/arks", headers=headers).status_code == status, path
            query = url_of[path].split("?", 1)[1]
            xorb = httpx.get(f"{url}/v1/xorb-data/{'0' * 64}?{query}")
            assert xorb.status_code == (404 if status == 200 else 403), path  # no such xorb
        token = httpx.get(f"{url}/v1/token", headers={"Authorization": "Bearer reader"})
        fresh = token.json()["accessToken"]
    assert TokenIssuer(derive_key(new.read_bytes(), "tokens")).check(fresh, time.time()) == "read"


@pytest.mark.slow
def test_shared_store_on_a_random_key_warns(
    seaweedfs: SeaweedFS, postgresql: PostgreSQL, tmp_path: Path
) -> None:
    place = new_place(seaweedfs, postgresql)
    key = tmp_path / "key"
    key.write_bytes(b"k" * 32)
    for extra, warned in (((), True), (("--key-file", str(key)), False)):
        args = (*place.serve_args()[2:], "--open-read", *extra)
        with arkfs_server(place.location, *args) as (_url, proc):
            log = _logged_so_far(proc)
        assert ("runs on a random key" in log) == warned, log


def _logged_so_far(proc: subprocess.Popen[str]) -> str:
    """What the server wrote to stderr before it said it was serving (start-up lines)."""
    assert proc.stderr is not None
    fd = proc.stderr.fileno()
    os.set_blocking(fd, False)
    try:
        return os.read(fd, 1 << 16).decode()
    except BlockingIOError:
        return ""
    finally:
        os.set_blocking(fd, True)
