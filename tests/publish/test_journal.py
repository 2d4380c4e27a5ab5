"""The upload journal: acknowledged xorbs survive; a record cut short by a crash does not."""

import os
from pathlib import Path

import pytest

from arkfs.publish.journal import UploadJournal
from arkfs.xet.hashing import chunk_hash
from arkfs.xet.xorb import serialize_xorb

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_records_load_back_and_a_torn_tail_is_ignored(tmp_path: Path) -> None:
    journal = UploadJournal(tmp_path / "j" / "journal")
    assert journal.load() == []
    xorbs = []
    for _ in range(2):
        chunks = [os.urandom(1000) for _ in range(3)]
        xorbs.append(serialize_xorb([(chunk_hash(c), c) for c in chunks]))
        journal.record(xorbs[-1].footer, len(xorbs[-1].data))
    assert journal.load() == [(x.footer, len(x.data)) for x in xorbs]
    with open(journal.path, "r+b") as f:
        f.truncate(journal.path.stat().st_size - 5)
    assert journal.load() == [(xorbs[0].footer, len(xorbs[0].data))]
    journal.remove()
    journal.remove()
    assert journal.load() == []
