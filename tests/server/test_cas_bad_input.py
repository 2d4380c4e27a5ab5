"""Bad uploads to `arkfs serve` are refused with the right status, and the store is unchanged."""

import random
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from arkfs.xet.constants import MAX_XORB_ACCEPTED
from arkfs.xet.hashing import chunk_hash, hash_to_string, string_to_hash
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import FileBlock, Shard, cas_block, serialize_upload
from arkfs.xet.xorb import parse_xorb, serialize_xorb
from tests.support.server import arkfs_server

WRITE = {"Authorization": "Bearer w"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("bad")
    (root / "tokens").write_text("w write\nr read\n")
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        yield url, root / "store"


def tree(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes()
        for p in sorted(store.rglob("*"))
        if p.is_file() and not p.name.startswith("index.sqlite")
    }


def xorb(seed: int) -> tuple[str, bytes]:
    data = random.Random(seed).randbytes(20_000)
    x = serialize_xorb([(chunk_hash(data), data)])
    return hash_to_string(x.hash), x.data


def test_bad_xorbs_refused_store_unchanged(server) -> None:
    url, store = server
    before = tree(store)
    name, data = xorb(1)
    other, _ = xorb(2)
    cases = [
        (f"/v1/xorbs/default/{other}", data, 400, "hash mismatch"),
        (f"/v1/xorbs/default/{name}", data[:-10], 400, "invalid xorb"),
        (f"/v1/xorbs/default/{name}", b"\x01" + data[1:], 400, "invalid xorb"),
        ("/v1/xorbs/default/not-a-hash", data, 400, "malformed xorb hash"),
        (f"/v1/xorbs/default/{name}", bytes(MAX_XORB_ACCEPTED + 1), 413, "exceeds"),
    ]
    for path, body, status, words in cases:
        r = httpx.post(url + path, content=body, headers=WRITE, timeout=60)
        assert r.status_code == status, (path, r.text)
        assert words in r.json()["error"]
    assert tree(store) == before


def test_shard_with_missing_xorb_refused(server) -> None:
    url, store = server
    before = tree(store)
    data = random.Random(3).randbytes(20_000)
    shard = Shard(files=(FileBlock(chunk_hash(data), (Term(bytes(32), 0, 1, 20_000),)),))
    r = httpx.post(url + "/v1/shards", content=serialize_upload(shard), headers=WRITE)
    assert r.status_code == 400 and "not uploaded" in r.json()["error"]
    r = httpx.post(url + "/v1/shards", content=b"garbage" * 10, headers=WRITE)
    assert r.status_code == 400 and "invalid shard" in r.json()["error"]
    assert tree(store) == before


def test_shard_with_wrong_file_hash_refused(server) -> None:
    url, store = server
    name, data = xorb(4)
    r = httpx.post(f"{url}/v1/xorbs/default/{name}", content=data, headers=WRITE)
    assert r.json() == {"was_inserted": True}
    r = httpx.post(f"{url}/v1/xorbs/default/{name}", content=data, headers=WRITE)
    assert r.json() == {"was_inserted": False}
    before = tree(store)
    shard = Shard(files=(FileBlock(bytes(range(32)), (Term(string_to_hash(name), 0, 1, 20_000),)),))
    r = httpx.post(url + "/v1/shards", content=serialize_upload(shard), headers=WRITE)
    assert r.status_code == 400, r.text
    assert tree(store) == before


def test_shard_field_that_disagrees_with_its_xorb_refused(server) -> None:
    url, store = server
    name, data = xorb(5)
    httpx.post(f"{url}/v1/xorbs/default/{name}", content=data, headers=WRITE)
    footer = parse_xorb(data, string_to_hash(name)).footer
    block = cas_block(footer, 0, lambda _: False)
    before = tree(store)
    for bad, field in [
        (replace(block, num_bytes_in_cas=block.num_bytes_in_cas + 1), "num bytes in cas"),
        (replace(block, chunks=(replace(block.chunks[0], unpacked_bytes=1),)), "unpacked_bytes"),
    ]:
        body = serialize_upload(Shard(cas_blocks=(bad,)))
        r = httpx.post(url + "/v1/shards", content=body, headers=WRITE)
        assert r.status_code == 400, r.text
        assert field in r.json()["error"] and "\n" not in r.json()["error"]
    assert tree(store) == before


def test_signed_urls_expire_and_resist_tampering(server) -> None:
    url, _ = server
    name, _ = xorb(4)
    r = httpx.get(f"{url}/v1/xorb-data/{name}?expires=1&sig=00")
    assert r.status_code == 403
    r = httpx.get(f"{url}/v1/xorb-data/{name}?expires=9999999999&sig=00")
    assert r.status_code == 403
