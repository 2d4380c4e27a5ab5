"""Shard intake reads each xorb once to check its files' SHA-256 (#28): 2,000 small files
cost one read per xorb, not one per file (each an S3 GET on the scaled store)."""

import random
from pathlib import Path
from typing import cast

from arkfs.service.archive_service import ArchiveService
from arkfs.store.base import Store
from arkfs.store.local import LocalStore
from tests.backend.content import build_content

FILES = 2000


class CountingReads:
    """A store that counts xorb reads, and passes every call on; each of its reads stands
    for a request, as the scaled store's S3 GETs do."""

    remote_reads = True

    def __init__(self, store: Store) -> None:
        self.store, self.reads = store, 0

    def read_xorb(self, h: bytes, start: int, end: int) -> bytes:
        self.reads += 1
        return self.store.read_xorb(h, start, end)

    def __getattr__(self, name: str) -> object:
        return getattr(self.store, name)


def test_many_small_files_cost_one_read_per_xorb(tmp_path: Path) -> None:
    rng = random.Random(4)
    files = {f"f{i}": rng.randbytes(4096) for i in range(FILES)}
    content = build_content(files)
    with LocalStore.open(tmp_path / "store") as local:
        counting = CountingReads(local)
        service = ArchiveService(cast(Store, counting), bytes(32), "in the test store")
        for x in content.xorbs:
            service.put_xorb(x.hash, x.data)
        assert service.put_shard(content.shard)
        assert 0 < counting.reads <= len(content.xorbs), (counting.reads, len(content.xorbs))
        for name, data in list(files.items())[:20]:  # what was registered reads back
            record = service.file(content.files[name].hash)
            assert record.size == len(data)
