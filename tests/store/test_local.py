"""LocalStore on real files: round trips, idempotence, rejection of bad input, check()."""

import fcntl
import random
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkfs.store import local
from arkfs.store.base import Binding, ChunkLocation, FileRecord, Store
from arkfs.store.errors import NotFound, Rejected, StoreCorrupt, StoreError
from arkfs.store.local import LocalStore
from arkfs.util.atomic import write_atomic
from arkfs.xet.hashing import ZERO_HASH, file_hash, hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import SerializedXorb, parse_xorb
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


@pytest.fixture
def rng() -> random.Random:
    return random.Random(1234)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LocalStore]:
    with LocalStore.open(tmp_path / "store") as s:
        yield s


def xorb_path(store: LocalStore, h: bytes) -> Path:
    name = hash_to_string(h)
    return store.root / "xorbs" / name[:2] / name


def shard_path(store: LocalStore, h: bytes) -> Path:
    return store.root / "shards" / hash_to_string(h)


def snapshot(store: LocalStore) -> tuple[object, ...]:
    """Everything a put could change: xorb and shard files, and the index contents."""
    files = {
        str(p.relative_to(store.root)): p.read_bytes()
        for sub in ("xorbs", "shards")
        for p in sorted((store.root / sub).rglob("*"))
        if p.is_file()
    }
    return files, store.stats(), store.list_bindings()


def put_file(
    store: LocalStore, rng: random.Random, xorbs: int = 2
) -> tuple[list[SerializedXorb], FileRecord, bytes]:
    """Store xorbs and a shard registering the file made of them; return all three."""
    xs = [random_xorb(rng) for _ in range(xorbs)]
    for x in xs:
        assert store.put_xorb(x.hash, x.data)
    record = file_of(xs)
    shard_hash, data = shard_blob(rng)
    assert store.put_shard(shard_hash, data, [record], first_chunks(xs))
    return xs, record, shard_hash


def test_local_store_is_a_store(store: LocalStore) -> None:
    assert isinstance(store, Store)


def test_footer_is_read_from_disk_by_a_new_instance(tmp_path: Path, rng: random.Random) -> None:
    x = random_xorb(rng, chunks=3)
    with LocalStore.open(tmp_path) as s:
        s.put_xorb(x.hash, x.data)
    with LocalStore.open(tmp_path, create=False) as s:
        assert s.xorb_footer(x.hash) == x.footer
        assert s.xorb_footer(x.hash) is s.xorb_footer(x.hash)


def test_put_xorb_rejects_bad_input_and_leaves_store_unchanged(
    store: LocalStore, rng: random.Random
) -> None:
    x, other = random_xorb(rng), random_xorb(rng)
    region = parse_xorb(x.data).region
    before = snapshot(store)
    bad = [
        (other.hash, x.data),  # stored under another hash
        (x.hash, region),  # the upload form, without footer
        (x.hash, x.data[:-5] + bytes([x.data[-5] ^ 1]) + x.data[-4:]),  # damaged footer
        (x.hash[:31], x.data),  # not a hash
    ]
    for h, data in bad:
        with pytest.raises(Rejected):
            store.put_xorb(h, data)
    assert snapshot(store) == before


def test_shard_round_trip(tmp_path: Path, rng: random.Random) -> None:
    with LocalStore.open(tmp_path) as store:
        xs, record, shard_hash = put_file(store, rng)
        assert store.put_shard(shard_hash, b"ignored", [record], []) is False
        assert store.has_file(record.file_hash)
        assert store.get_file(record.file_hash) == record
        entry = first_chunks(xs)[1]
        assert store.dedup_lookup(entry.chunk_hash) == [ChunkLocation(xs[1].hash, 0)]
        assert store.dedup_lookup(xs[1].footer.chunk_hashes[-1]) == (
            [ChunkLocation(xs[1].hash, 0)] if xs[1].footer.num_chunks == 1 else []
        )
    with LocalStore.open(tmp_path, create=False) as store:
        assert store.get_file(record.file_hash) == record
        stats = store.stats()
        assert (stats.xorbs, stats.shards, stats.files, stats.dedup_chunks) == (2, 1, 1, 2)
        assert shard_path(store, shard_hash).is_file()
        assert store.check() == []


def test_empty_file_and_partial_terms(store: LocalStore, rng: random.Random) -> None:
    x = random_xorb(rng, chunks=5)
    store.put_xorb(x.hash, x.data)
    sizes = x.footer.chunk_sizes()
    middle = [(x.footer.chunk_hashes[i], sizes[i]) for i in (1, 2, 3)]
    part = FileRecord(  # chunks 1..4, twice
        file_hash(middle + middle),
        2 * sum(sizes[1:4]),
        None,
        (Term(x.hash, 1, 4, sum(sizes[1:4])),) * 2,
    )
    empty = FileRecord(ZERO_HASH, 0, None, ())
    assert store.put_shard(*shard_blob(rng), [part, empty], [])
    assert store.get_file(part.file_hash) == part
    assert store.get_file(ZERO_HASH) == empty


def test_a_file_in_two_shards_keeps_its_first_record(store: LocalStore, rng: random.Random) -> None:
    xs, record, _ = put_file(store, rng)
    assert store.put_shard(*shard_blob(rng), [record], first_chunks(xs))
    assert store.get_file(record.file_hash) == record
    assert store.stats().shards == 2
    assert store.check() == []


def test_file_sizes_answers_many_files_in_batches(
    store: LocalStore, rng: random.Random, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(local, "QUERY_PARAMETERS", 2)  # several IN (...) queries
    records = [put_file(store, rng, xorbs=1)[1] for _ in range(5)]
    absent = bytes(range(32))
    found = store.file_sizes([absent, *(r.file_hash for r in records)])
    assert found == {r.file_hash: (r.size, r.sha256) for r in records}


def test_missing_file(store: LocalStore) -> None:
    assert not store.has_file(ZERO_HASH)
    with pytest.raises(NotFound, match="upload the shard"):
        store.get_file(ZERO_HASH)
    assert store.dedup_lookup(ZERO_HASH) == []


def test_open_refuses_what_is_not_a_store(tmp_path: Path) -> None:
    with pytest.raises(NotFound, match="no arkfs store"):
        LocalStore.open(tmp_path / "absent", create=False)
    assert not (tmp_path / "absent").exists()
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "notes.txt").write_text("mine")
    with pytest.raises(StoreError, match=r"notes\.txt but no arkfs store"):
        LocalStore.open(tmp_path / "home")
    assert sorted(p.name for p in (tmp_path / "home").iterdir()) == ["notes.txt"]


def test_open_refuses_another_schema_version(tmp_path: Path) -> None:
    LocalStore.open(tmp_path).close()
    with sqlite3.connect(tmp_path / "index.sqlite") as db:
        db.execute("UPDATE schema_version SET version = 99")
    with pytest.raises(StoreError, match="schema version 99"):
        LocalStore.open(tmp_path)


def test_open_reports_a_damaged_index(tmp_path: Path) -> None:
    (tmp_path / "index.sqlite").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreCorrupt, match="restore it from a backup"):
        LocalStore.open(tmp_path)


def test_concurrent_threads(store: LocalStore) -> None:
    records: list[FileRecord] = []
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            r = random.Random(seed)
            for _ in range(5):
                records.append(put_file(store, r)[1])
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert all(store.get_file(r.file_hash) == r for r in records)
    assert store.stats().files == 20
    assert store.check() == []


def test_closed_store_raises_programming_error(tmp_path: Path) -> None:
    store = LocalStore.open(tmp_path)
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        store.stats()


def test_write_atomic_replaces_and_leaves_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "f"
    write_atomic(target, b"one")
    write_atomic(target, memoryview(b"two"))
    assert target.read_bytes() == b"two"
    with pytest.raises(TypeError):
        write_atomic(target, "text")  # type: ignore[arg-type]
    assert [p.name for p in tmp_path.iterdir()] == ["f"]
    assert target.read_bytes() == b"two"


# check()


def test_check_finds_nothing_in_a_sound_store(store: LocalStore, rng: random.Random) -> None:
    put_file(store, rng)
    store.bind(Binding("ark:1/a", b"", "", 0.0))
    assert store.check() == []


def test_check_finds_a_flipped_byte_in_a_xorb(tmp_path: Path, rng: random.Random) -> None:
    with LocalStore.open(tmp_path) as store:
        xs, record, _ = put_file(store, rng)
    path = xorb_path(store, xs[0].hash)
    data = bytearray(path.read_bytes())
    data[10] ^= 0x40
    path.write_bytes(bytes(data))
    with LocalStore.open(tmp_path) as store:
        problems = store.check()
        name = hash_to_string(xs[0].hash)
        assert any(p.startswith(f"xorb {name} is damaged") for p in problems), problems
        assert f"file {hash_to_string(record.file_hash)}: term 0: xorb {name} is damaged" in (
            " ".join(problems)
        )
        assert len(problems) == 3  # the xorb, the file, the dedup entry


def test_damaged_footer_is_corrupt_not_missing(tmp_path: Path, rng: random.Random) -> None:
    with LocalStore.open(tmp_path) as store:
        xs, _, _ = put_file(store, rng)
    path = xorb_path(store, xs[0].hash)
    data = bytearray(path.read_bytes())
    data[-40] ^= 1  # a chunk boundary offset or the trailer
    path.write_bytes(bytes(data))
    with LocalStore.open(tmp_path) as store:
        with pytest.raises(StoreCorrupt, match="store check"):
            store.xorb_footer(xs[0].hash)
        path.write_bytes(b"xyz")
        with pytest.raises(StoreCorrupt, match="only 3 bytes"):
            store.xorb_footer(xs[0].hash)


def test_check_finds_a_deleted_xorb(store: LocalStore, rng: random.Random) -> None:
    xs, record, _ = put_file(store, rng)
    xorb_path(store, xs[1].hash).unlink()
    name = hash_to_string(xs[1].hash)
    assert store.check() == [
        f"file {hash_to_string(record.file_hash)}: term 1: xorb {name} is missing",
        f"dedup chunk {hash_to_string(xs[1].footer.chunk_hashes[0])}: xorb {name} is missing",
    ]


def test_check_finds_and_repairs_leftover_temp_files(tmp_path: Path) -> None:
    LocalStore.open(tmp_path).close()
    leftover = tmp_path / "xorbs" / "ab" / ".tmp-0123456789abcdef"
    live = tmp_path / "shards" / ".tmp-fedcba9876543210"
    leftover.write_bytes(b"half a xorb")
    live.write_bytes(b"being written")
    with open(live, "rb") as writer:  # a live writer holds its temp file locked
        fcntl.flock(writer, fcntl.LOCK_EX)
        with LocalStore.open(tmp_path) as store:
            assert not leftover.exists()  # open removed it
            assert live.exists()
            leftover.write_bytes(b"another crash since")
            problems = store.check()
            assert len(problems) == 1
            assert f"leftover temp file {leftover}" in problems[0]
            assert store.check(repair=True) == [f"removed leftover temp file {leftover}"]
            assert store.check() == []
            assert live.exists()


def test_check_finds_a_missing_or_damaged_shard(store: LocalStore, rng: random.Random) -> None:
    _, _, gone = put_file(store, rng)
    _, _, changed = put_file(store, rng)
    shard_path(store, gone).unlink()
    shard_path(store, changed).write_bytes(b"other bytes")
    assert store.check() == [
        f"shard {hash_to_string(h)} {what}"
        for h, what in sorted(
            [
                (gone, f"is indexed but its file {shard_path(store, gone)} is missing"),
                (changed, f"is damaged: {shard_path(store, changed)} differs from what was stored"),
            ]
        )
    ]


def test_check_finds_index_rows_pointing_nowhere(store: LocalStore, rng: random.Random) -> None:
    put_file(store, rng)
    with sqlite3.connect(store.root / "index.sqlite") as db:  # foreign keys off by default
        db.execute("INSERT INTO terms VALUES (?, 0, ?, 0, 1, 1)", (ZERO_HASH, ZERO_HASH))
        db.execute("INSERT INTO dedup VALUES (?, ?, 0, ?)", (ZERO_HASH, ZERO_HASH, b"no shard"))
    problems = store.check()
    assert "a row of table terms refers to a missing row of files" in " ".join(problems)
    assert "a row of table dedup refers to a missing row of shards" in " ".join(problems)
    assert f"dedup chunk {hash_to_string(ZERO_HASH)}: xorb" in problems[-1]


def test_check_finds_unexpected_entries(store: LocalStore, rng: random.Random) -> None:
    x = random_xorb(rng)
    name = hash_to_string(x.hash)
    misplaced = store.root / "xorbs" / ("00" if name[:2] != "00" else "01") / name
    misplaced.write_bytes(x.data)
    (store.root / "shards" / "README").write_text("hi")
    problems = store.check()
    assert problems == [
        f"unexpected entry {misplaced} among the xorbs; move it out of the store",
        f"unexpected entry {store.root / 'shards' / 'README'} among the shards; "
        "move it out of the store",
    ]
    assert store.stats().xorbs == 0
