"""Shards a publish sends: every file and xorb in exactly one, none over the file limit.

The server reads each file of a shard back to check its SHA-256 before it answers, so a
shard of 100,000 small files outlasted the client's read timeout (found by
benchmarks/scale.py); the file limit bounds every shard's intake.
"""

import pytest

from arkfs.publish import publisher
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import CasBlock, FileBlock, Shard

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_shards_are_split_by_file_count_and_lose_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publisher, "MAX_SHARD_FILES", 7)
    xorb = bytes(32)
    files = tuple(
        FileBlock(i.to_bytes(32, "big"), (Term(xorb, i, i + 1, 10),), None, None)
        for i in range(100)
    )
    cas = (CasBlock(xorb, (), 0, 0),)
    shards = [shard for shard, _ in publisher._split(Shard(files=files, cas_blocks=cas))]
    assert all(len(s.files) <= 7 for s in shards)
    assert [f for s in shards for f in s.files] == list(files)
    assert [c for s in shards for c in s.cas_blocks] == list(cas)
