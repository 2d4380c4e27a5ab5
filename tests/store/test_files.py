"""read_file rebuilds stored files exactly, any range, and refuses damaged bytes."""

import dataclasses
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from arkfs.store import files
from arkfs.store.base import FileRecord
from arkfs.store.errors import StoreCorrupt
from arkfs.store.files import check_file, read_file
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.reconstruction import Term
from arkfs.xet.xorb import SerializedXorb, parse_xorb
from tests.store.factory import file_of, first_chunks, random_xorb, shard_blob

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

Stored = tuple[LocalStore, FileRecord, bytes, list[SerializedXorb]]


@pytest.fixture
def stored(tmp_path: Path) -> Iterator[Stored]:
    """A store holding one file of three xorbs, the middle one used twice."""
    rng = random.Random(7)
    xorbs = [random_xorb(rng, chunks=6) for _ in range(2)]
    with LocalStore.open(tmp_path / "store") as store:
        for x in xorbs:
            store.put_xorb(x.hash, x.data)
        record = file_of([xorbs[0], xorbs[1], xorbs[0]])
        store.put_shard(*shard_blob(rng), [record], first_chunks(xorbs))
        content = b"".join(
            c for x in (xorbs[0], xorbs[1], xorbs[0]) for c in parse_xorb(x.data).chunks
        )
        yield store, record, content, xorbs


def test_whole_file_and_ranges(stored: Stored, monkeypatch: pytest.MonkeyPatch) -> None:
    store, record, content, _ = stored
    check_file(store, record)
    assert b"".join(read_file(store, record)) == content
    monkeypatch.setattr(files, "BATCH_BYTES", 5000)  # several steps per term
    rng = random.Random(3)
    size = len(content)
    cases = [(0, size), (0, 1), (size - 1, size), (size - 5, size + 50)]
    cases += [(s, s + rng.randint(1, size)) for s in rng.sample(range(size), 20)]
    for start, end in cases:
        pieces = list(read_file(store, record, start, end))
        assert all(pieces), (start, end)
        assert b"".join(pieces) == content[start:end], (start, end)


def test_flipped_stored_byte_is_store_corrupt(stored: Stored) -> None:
    store, record, content, xorbs = stored
    name = hash_to_string(xorbs[1].hash)
    path = store.root / "xorbs" / name[:2] / name
    data = bytearray(path.read_bytes())
    data[20] ^= 0x01  # inside the first chunk's payload; the footer stays intact
    path.write_bytes(bytes(data))
    first_term = record.terms[0].unpacked_length
    assert b"".join(read_file(store, record, 0, first_term)) == content[:first_term]
    after = first_term + xorbs[1].footer.unpacked_size(0)  # the damaged chunk is not read
    second_term_end = first_term + record.terms[1].unpacked_length
    assert (
        b"".join(read_file(store, record, after, second_term_end)) == content[after:second_term_end]
    )
    with pytest.raises(StoreCorrupt, match=f"xorb {name} is damaged"):
        b"".join(read_file(store, record))


def test_check_file_refuses_a_record_that_disagrees(stored: Stored) -> None:
    store, record, _, _ = stored
    t = record.terms[0]
    short = dataclasses.replace(
        record, terms=(Term(t.xorb_hash, t.start, t.end - 1, 1), *record.terms[1:])
    )
    with pytest.raises(StoreCorrupt, match="run `arkfs store check`"):
        check_file(store, short)
