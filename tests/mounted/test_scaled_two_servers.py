"""Two `arkfs serve` processes over one bucket and one database: hf_xet and the mount read
what either wrote, and no xorb byte passes through a server on the read path."""

import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from arkfs.archive.manifest import Manifest
from arkfs.store.scaled import ScaledStore
from arkfs.xet.hashing import string_to_hash
from tests.support.archive import MIB, make_tree, publish, write_big_file
from tests.support.cli import ARKFS
from tests.support.corpus import write_corpus
from tests.support.hfxet import download_file, download_range, upload_files
from tests.support.mount import arkfs_mount, mount_stats
from tests.support.server import Server
from tests.support.services import PostgreSQL, ScaledPlace, SeaweedFS, new_place

pytestmark = pytest.mark.slow
TOKENS = "writer write\nreader read\n"
BIG = 256 * MIB  # the cold read of the acceptance


@dataclass
class Pair:
    """Two servers over one store, and where that store is."""

    a: Server
    b: Server
    place: ScaledPlace
    root: Path


@pytest.fixture(scope="module")
def pair(
    tmp_path_factory: pytest.TempPathFactory, seaweedfs: SeaweedFS, postgresql: PostgreSQL
) -> Iterator[Pair]:
    """Servers A and B, sharing a signing key, over a new bucket and database."""
    root = tmp_path_factory.mktemp("pair")
    (root / "tokens").write_text(TOKENS)
    (root / "key").write_bytes(random.Random(7).randbytes(32))
    place = new_place(seaweedfs, postgresql)
    extra = (
        *place.serve_args()[2:],
        "--tokens",
        str(root / "tokens"),
        "--key-file",
        str(root / "key"),
    )
    with Server(place.location, *extra) as a, Server(place.location, *extra) as b:
        yield Pair(a, b, place, root)


def xorb_objects(seaweedfs: SeaweedFS, place: ScaledPlace) -> dict[str, int]:
    """The xorb objects in the pair's bucket, by key."""
    bucket, prefix = place.location[len("s3://") :].split("/", 1)
    return seaweedfs.objects(bucket, f"{prefix}/xorbs/")


def test_hf_xet_uploads_through_one_and_downloads_through_the_other(
    pair: Pair, seaweedfs: SeaweedFS, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    files = write_corpus(tmp_path / "in")
    big = tmp_path / "in" / "random-12MiB"
    big.write_bytes(random.Random(12).randbytes(12 * MIB))
    names = sorted(n for n in files if n != "empty")
    paths = [files[n] for n in names] + [big]
    metas = upload_files(pair.a.url, paths, token="writer")
    before = pair.b.stats("reader")
    for path, meta in zip(paths, metas, strict=True):
        out = tmp_path / "out" / path.name
        out.parent.mkdir(exist_ok=True)
        download_file(pair.b.url, meta.hash, meta.file_size, out, token="reader")
        assert out.read_bytes() == path.read_bytes(), path.name
    data = big.read_bytes()
    rng = random.Random(3)
    for _ in range(6):
        start = rng.randrange(len(data))
        end = min(len(data), start + rng.choice([1, 65536, 3_000_000]))
        got = download_range(pair.b.url, metas[-1].hash, len(data), start, end, token="reader")
        assert got == data[start:end]
    after = pair.b.stats("reader")
    assert after["reconstructions"] > before["reconstructions"]
    assert after["xorb_bytes_served"] == before["xorb_bytes_served"] == 0
    assert after["footer_bytes_served"] == 0
    with ScaledStore.open(pair.place.location, pair.place.endpoint, pair.place.index) as store:
        assert len(xorb_objects(seaweedfs, pair.place)) == store.stats().xorbs


def test_publish_through_one_mount_through_the_other_diff_is_identical(
    pair: Pair, tmp_path: Path
) -> None:
    tree = make_tree(tmp_path / "tree")
    (tree / "big").mkdir()
    write_big_file(tree / "big" / "cold.bin", BIG, b"cold read through S3")
    publish(tree, "ark:12345/x6pair", "--server", pair.a.url, "--token", "writer")
    before = pair.b.stats("reader")
    args = ("--server", pair.b.url, "--token", "reader", "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        archive = m.path / "ark:12345" / "x6pair"
        done = subprocess.run(
            ["diff", "-r", "--no-dereference", str(tree), str(archive)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        fetched = mount_stats(m.path)
    after = pair.b.stats("reader")
    # The mount read every byte (the 256 MiB file cold) through pre-signed bucket URLs:
    assert after["reconstructions"] > before["reconstructions"]
    assert after["xorb_bytes_served"] == 0
    assert after["footer_bytes_served"] == 0
    assert fetched, fetched


def test_overlapping_concurrent_publishes_store_each_xorb_once(
    pair: Pair, seaweedfs: SeaweedFS, tmp_path: Path
) -> None:
    # More than a xorb's 64 MiB of shared chunks first: both publishers cut the same xorb.
    shared = random.Random(99).randbytes(70 * MIB)
    trees = []
    for i in (1, 2):
        tree = tmp_path / f"tree{i}"
        (tree / "a-shared").mkdir(parents=True)
        (tree / "a-shared" / "same.bin").write_bytes(shared)
        (tree / f"z-only-{i}.bin").write_bytes(random.Random(1000 + i).randbytes(MIB))
        trees.append(tree)
    arks = ["ark:12345/x6race1", "ark:12345/x6race2"]
    earlier = xorb_objects(seaweedfs, pair.place)  # of the tests before, in the same bucket
    procs = [
        subprocess.Popen(
            [
                *(ARKFS, "publish", str(tree), "--ark", ark),
                *("--server", server.url, "--token", "writer", "--who", "w", "--what", "t"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tree, ark, server in zip(trees, arks, (pair.a, pair.b), strict=True)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    everything = xorb_objects(seaweedfs, pair.place)
    objects = {k: size for k, size in everything.items() if k not in earlier}
    with ScaledStore.open(pair.place.location, pair.place.endpoint, pair.place.index) as store:
        referenced: list[set[bytes]] = []
        for ark in arks:
            manifest = Manifest.from_msgpack(store.get_binding(ark).manifest)
            xorbs: set[bytes] = set()
            for entry in manifest.files:
                assert entry.xet_hash is not None
                if entry.size:
                    xorbs |= {t.xorb_hash for t in store.get_file(entry.xet_hash).terms}
            referenced.append(xorbs)
        stats = store.stats()
        assert store.check() == []
    # Every xorb object is indexed once, and named by its hash, so stored once.
    assert stats.xorbs == len(everything)
    assert sum(everything.values()) == stats.xorb_bytes
    named = {string_to_hash(k.rsplit("/", 1)[1]) for k in everything}
    new = {string_to_hash(k.rsplit("/", 1)[1]) for k in objects}
    assert referenced[0] | referenced[1] <= named
    assert new <= referenced[0] | referenced[1]  # nothing stored that no file uses
    # Both archives read the shared xorb, and its bytes were stored once, not per publisher.
    assert referenced[0] & referenced[1]
    assert sum(objects.values()) < len(shared) + 2 * 8 * MIB
    args = ("--server", pair.a.url, "--token", "reader", "--cache-dir", str(tmp_path / "cache"))
    with arkfs_mount(tmp_path / "mnt", *args) as m:
        for tree, ark in zip(trees, arks, strict=True):
            done = subprocess.run(
                ["diff", "-r", str(tree), str(m.path / ark)], capture_output=True, timeout=300
            )
            assert done.returncode == 0, done.stdout[-2000:]
