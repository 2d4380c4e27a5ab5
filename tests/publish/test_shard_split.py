"""Shards a publish sends: every file and xorb in exactly one, none over the file limit.

The server reads each file of a shard back to check its SHA-256 before it answers, so a
shard of 100,000 small files outlasted the client's read timeout (found by
benchmarks/scale.py); the file limit bounds every shard's intake.
"""

import random
from collections.abc import Callable
from pathlib import Path

import pytest
import trio

from arkfs.archive.manifest import Manifest
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.publish import publisher
from arkfs.store.files import read_file
from arkfs.store.local import LocalStore
from arkfs.xet.reconstruction import Term
from arkfs.xet.shard import CasBlock, FileBlock, Shard, parse_shard
from tests.support.publishing import publish_scanned

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`
ARK = "ark:12345/x6shards"


def publish_watched(
    tree: Path,
    store: Path,
    on_xorb: Callable[[bytes], None] = lambda h: None,
    on_shard: Callable[[Shard], None] = lambda s: None,
) -> None:
    """Publish tree into a new embedded store, telling on_xorb each xorb stored (its hash)
    and on_shard each shard before it is stored."""

    async def main() -> None:
        backend = EmbeddedBackend(LocalStore.open(store))
        upload_xorb, upload_shard = backend.upload_xorb, backend.upload_shard

        async def xorb(xorb_hash: bytes, data: bytes) -> bool:
            ok = await upload_xorb(xorb_hash, data)
            on_xorb(xorb_hash)
            return ok

        async def shard(data: bytes) -> bool:
            on_shard(parse_shard(data))
            return await upload_shard(data)

        backend.upload_xorb, backend.upload_shard = xorb, shard  # type: ignore[method-assign]
        try:
            await publish_scanned(backend, tree, ARK)
        finally:
            await backend.aclose()

    trio.run(main)


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


def test_a_publish_sends_files_and_chunks_in_groups_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FileBlocks and CasBlocks are made a group at a time (MAX_SHARD_FILES files,
    MAX_SHARD_CHUNKS chunks), each file and xorb in exactly one shard, and every file reads
    back from the store as it was written."""
    monkeypatch.setattr(publisher, "MAX_SHARD_FILES", 7)
    monkeypatch.setattr(publisher, "MAX_SHARD_CHUNKS", 3)
    monkeypatch.setattr(
        publisher, "cuts_before", lambda h, size, first: first and size > 0
    )  # a xorb a file
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(30):
        (tree / f"f{i:02}").write_bytes(random.Random(i).randbytes(100 + i))
    sent: list[Shard] = []
    publish_watched(tree, tmp_path / "store", on_shard=sent.append)
    files = [f.file_hash for s in sent for f in s.files]
    xorbs = [c.xorb_hash for s in sent for c in s.cas_blocks]
    assert len(files) == len(set(files)) == 30 and len(xorbs) == len(set(xorbs)) > 1
    assert all(len(s.files) <= 7 and sum(len(c.chunks) for c in s.cas_blocks) <= 3 for s in sent)
    with LocalStore.open(tmp_path / "store", create=False) as store:
        manifest = Manifest.from_msgpack(store.get_binding(ARK).manifest)
        for e in manifest.files:
            assert e.xet_hash is not None
            data = b"".join(read_file(store, store.get_file(e.xet_hash)))
            assert data == (tree / e.path).read_bytes()


def test_files_are_registered_while_hashing_goes_on_once_their_xorbs_are_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full group of files whose xorbs are stored goes up before hashing ends (1,000,000
    shard entries are never held at once), and no shard names a xorb not yet stored
    (Upload Flow)."""
    monkeypatch.setattr(publisher, "MAX_SHARD_FILES", 4)
    monkeypatch.setattr(publisher, "BATCH_FILES", 1)  # each file hashed on its own
    monkeypatch.setattr(publisher, "cuts_before", lambda h, size, first: first and size > 0)
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(20):
        (tree / f"f{i:02}").write_bytes(random.Random(i).randbytes(200 + i))
    stored: set[bytes] = set()
    events: list[str] = []

    def xorb(xorb_hash: bytes) -> None:
        stored.add(xorb_hash)
        events.append("xorb")

    def shard(parsed: Shard) -> None:
        assert all(t.xorb_hash in stored for f in parsed.files for t in f.terms)
        events.append("files" if parsed.files else "chunks")

    publish_watched(tree, tmp_path / "store", on_xorb=xorb, on_shard=shard)
    assert events.count("xorb") == 20
    last_xorb = len(events) - 1 - events[::-1].index("xorb")
    assert "files" in events[:last_xorb]  # registered while later files were still hashed
