"""The one suite every Store backend passes: the directory with SQLite, and S3 with PostgreSQL.

Each test runs on both. Damage is made the backend's own way (damage.py); everything else
goes through the Store interface only.
"""

import dataclasses
import random
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from arkfs.archive.record import VersionInfo
from arkfs.store.base import Binding, ChunkLocation, Store
from arkfs.store.errors import NotFound, OutOfRange, Rejected
from arkfs.store.local import LocalStore
from arkfs.store.scaled import ScaledStore
from arkfs.xet.hashing import ZERO_HASH, hash_to_string
from arkfs.xet.xorb import SerializedXorb, parse_xorb
from tests.store.damage import flip_xorb_byte, remove_xorb
from tests.store.factory import bad_records, file_of, first_chunks, random_xorb, shard_blob
from tests.support.services import ScaledPlace

ARK = "ark:12345/x6np1wh8k"
pytestmark = pytest.mark.slow  # the scaled cases start SeaweedFS and PostgreSQL once


@pytest.fixture(params=["local", "scaled"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each backend in turn, new and empty."""
    if request.param == "local":
        with LocalStore.open(tmp_path / "store") as local:
            yield local
        return
    place: ScaledPlace = request.getfixturevalue("scaled_place")
    with ScaledStore.open(place.location, place.endpoint, place.index) as scaled:
        yield scaled


@pytest.fixture
def rng() -> random.Random:
    return random.Random(4321)


def state(store: Store) -> tuple[object, ...]:
    """What a put or bind could change, seen through the interface."""
    return store.stats(), store.list_bindings()


def put_file(store: Store, rng: random.Random) -> tuple[list[SerializedXorb], bytes]:
    xs = [random_xorb(rng) for _ in range(2)]
    for x in xs:
        assert store.put_xorb(x.hash, x.data) is True
    shard_hash, data = shard_blob(rng)
    assert store.put_shard(shard_hash, data, [file_of(xs)], first_chunks(xs)) is True
    return xs, shard_hash


def test_is_a_store(store: Store) -> None:
    assert isinstance(store, Store)


def test_xorb_round_trip_ranges_and_idempotence(store: Store, rng: random.Random) -> None:
    x = random_xorb(rng, chunks=6)
    assert not store.has_xorb(x.hash)
    assert store.put_xorb(x.hash, x.data) is True
    assert store.put_xorb(x.hash, x.data) is False
    assert store.has_xorb(x.hash)
    assert store.xorb_size(x.hash) == len(x.data)
    assert store.read_xorb(x.hash, 0, len(x.data)) == x.data
    lo, hi = x.footer.packed_range(2, 4)
    assert store.read_xorb(x.hash, lo, hi) == x.data[lo:hi]
    assert store.read_xorb(x.hash, 7, 7) == b""
    assert store.xorb_footer(x.hash) == x.footer
    size = len(x.data)
    for start, end in [(-1, 4), (0, size + 1), (9, 8), (size + 1, size + 1)]:
        with pytest.raises(
            OutOfRange, match=rf"{start}\.\.{end} are not within xorb \w+ \({size} bytes\)"
        ):
            store.read_xorb(x.hash, start, end)
    assert store.stats().xorbs == 1
    assert store.stats().xorb_bytes == size


def test_missing_xorb(store: Store, rng: random.Random) -> None:
    h = random_xorb(rng).hash
    assert not store.has_xorb(h)
    for call in (store.xorb_size, store.xorb_footer, lambda h: store.read_xorb(h, 0, 1)):
        with pytest.raises(NotFound, match=hash_to_string(h)):
            call(h)


def test_put_xorb_rejects_bad_input_and_changes_nothing(store: Store, rng: random.Random) -> None:
    x, other = random_xorb(rng), random_xorb(rng)
    before = state(store)
    for h, data in [
        (other.hash, x.data),
        (x.hash, parse_xorb(x.data).region),
        (x.hash, x.data[:-5] + bytes([x.data[-5] ^ 1]) + x.data[-4:]),
        (x.hash[:31], x.data),
    ]:
        with pytest.raises(Rejected):
            store.put_xorb(h, data)
    assert state(store) == before


def test_shard_round_trip_and_dedup(store: Store, rng: random.Random) -> None:
    xs, shard_hash = put_file(store, rng)
    record = file_of(xs)
    assert store.put_shard(shard_hash, b"ignored", [record], []) is False
    assert store.has_file(record.file_hash)
    assert store.get_file(record.file_hash) == record
    assert store.dedup_lookup(xs[1].footer.chunk_hashes[0]) == [ChunkLocation(xs[1].hash, 0)]
    assert store.dedup_lookup(ZERO_HASH) == []
    stats = store.stats()
    assert (stats.xorbs, stats.shards, stats.files, stats.dedup_chunks) == (2, 1, 1, 2)
    assert store.check() == []


def test_missing_file(store: Store) -> None:
    assert not store.has_file(ZERO_HASH)
    with pytest.raises(NotFound, match="upload the shard"):
        store.get_file(ZERO_HASH)


def test_put_shard_rejects_bad_records_and_changes_nothing(
    store: Store, rng: random.Random
) -> None:
    xs = [random_xorb(rng), random_xorb(rng)]
    for x in xs:
        store.put_xorb(x.hash, x.data)
    before = state(store)
    for files, dedup, message in bad_records(xs, random_xorb(rng)):
        shard_hash, data = shard_blob(rng)
        with pytest.raises(Rejected, match=message):
            store.put_shard(shard_hash, data, files, dedup)
        assert state(store) == before


def test_bind_appends_versions(store: Store) -> None:
    first = Binding(ARK, b"\x81\xa1a\x01", "erc:\nwho: A\n", 1.5, files=1, bytes=10)
    second = Binding(ARK, b"\x80", "erc:\nwho: B\n", 9.0, message="fix", files=2, bytes=30)
    assert [store.bind(first), store.bind(second)] == [1, 2]
    v1 = dataclasses.replace(first, version=1)
    v2 = dataclasses.replace(second, version=2, follows=1)
    assert [store.get_binding(ARK, 1), store.get_binding(ARK, 2), store.get_binding(ARK)] == [
        v1,
        v2,
        v2,
    ]
    assert store.list_versions(ARK) == [
        VersionInfo(ARK, 1, 1.5, "", None, 1, 10),
        VersionInfo(ARK, 2, 9.0, "fix", 1, 2, 30),
    ]
    store.bind(Binding("ark:12345/x6other", b"", "erc:\n", 6.0))
    assert store.list_bindings() == [ARK, "ark:12345/x6other"]
    assert store.list_bindings("ark:12345/x6o") == ["ark:12345/x6other"]
    assert (store.stats().bindings, store.stats().versions) == (2, 3)
    with pytest.raises(NotFound, match="ask for one of its versions 1 to 2"):
        store.get_binding(ARK, 3)
    with pytest.raises(NotFound, match="ark:12345/x6none is not bound in"):
        store.list_versions("ark:12345/x6none")
    with pytest.raises(Rejected, match="leave them out"):
        store.bind(dataclasses.replace(first, version=5))
    assert store.check() == []


def test_bind_again_copies_a_versions_manifest_and_counts(store: Store) -> None:
    """A metadata-only version: the manifest, files and bytes of the version named, with
    its own ERC, time and message; get_erc reads one version's record."""
    first = Binding(ARK, b"\x81\xa1a\x01", "erc:\nwho: A\n", 1.5, files=1, bytes=10)
    store.bind(first)
    store.bind(Binding(ARK, b"\x80", "erc:\nwho: B\n", 2.0, files=2, bytes=30))
    assert store.bind_again(ARK, 1, "erc:\nwho: C\n", 3.0, "metadata change") == 3
    v3 = Binding(ARK, first.manifest, "erc:\nwho: C\n", 3.0, 3, "metadata change", 2, 1, 10)
    assert store.get_binding(ARK) == v3
    assert store.list_versions(ARK)[-1] == VersionInfo(ARK, 3, 3.0, "metadata change", 2, 1, 10)
    assert [store.get_erc(ARK, v) for v in (1, 3)] == ["erc:\nwho: A\n", "erc:\nwho: C\n"]
    with pytest.raises(NotFound):
        store.bind_again(ARK, 7, "erc:\n", 4.0, "")
    with pytest.raises(NotFound):
        store.bind_again("ark:12345/x6none", 1, "erc:\n", 4.0, "")
    with pytest.raises(NotFound):
        store.get_erc(ARK, 7)
    assert [v.version for v in store.list_versions(ARK)] == [1, 2, 3]
    assert store.check() == []


def test_concurrent_binds_and_puts_store_each_thing_once(store: Store, rng: random.Random) -> None:
    x = random_xorb(rng)
    versions: list[int] = []
    inserted: list[bool] = []

    def work(i: int) -> None:
        inserted.append(store.put_xorb(x.hash, x.data))
        versions.append(store.bind(Binding(ARK, b"", "erc:\n", float(i))))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(versions) == list(range(1, 9))
    assert True in inserted
    if isinstance(store, ScaledStore):  # the index tells exactly one writer it inserted
        assert inserted.count(True) == 1
    assert store.stats().xorbs == 1
    assert store.check() == []


def test_check_finds_a_removed_and_a_flipped_xorb(store: Store, rng: random.Random) -> None:
    xs, _ = put_file(store, rng)
    assert store.check() == []
    flip_xorb_byte(store, xs[0].hash, 0)
    found = store.check()
    assert any(f"xorb {hash_to_string(xs[0].hash)} is damaged" in p for p in found), found
    remove_xorb(store, xs[1].hash)
    found = store.check()
    assert any(f"xorb {hash_to_string(xs[1].hash)}" in p and "missing" in p for p in found), found


def test_xorb_url_serves_ranges_from_the_store_itself(store: Store, rng: random.Random) -> None:
    x = random_xorb(rng)
    store.put_xorb(x.hash, x.data)
    url = store.xorb_url(x.hash, 60)
    if isinstance(store, LocalStore):
        assert url is None  # the server signs its own URLs for a directory
        return
    assert url is not None
    reply = httpx.get(url, headers={"Range": "bytes=10-19"}, timeout=30)
    assert reply.status_code == 206
    assert reply.content == x.data[10:20]
    assert reply.headers["cache-control"] == "public, immutable, max-age=60"
    assert httpx.get(url, headers={"Range": "bytes=-8"}, timeout=30).content == x.data[-8:]
