"""EmbeddedBackend specifics: messages, damage in the store, parallel use."""

import random
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest
import trio

from arkfs.backend.base import BadReply, NotBound
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import hash_to_string
from arkfs.xet.shard import parse_shard, serialize_stored
from tests.backend.content import (
    Content,
    File,
    build_content,
    erc_of,
    manifest_of,
    read_range,
    upload,
)

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

T = TypeVar("T")


def run(root: Path, body: Callable[[EmbeddedBackend], Awaitable[T]]) -> T:
    async def main() -> T:
        backend = EmbeddedBackend(LocalStore.open(root))
        try:
            return await body(backend)
        finally:
            await backend.aclose()

    return trio.run(main)


def stored(tmp_path: Path, seed: int = 1) -> tuple[Path, Content]:
    content = build_content({"file": random.Random(seed).randbytes(500_000)})
    run(tmp_path / "store", lambda b: upload(b, content))
    return tmp_path / "store", content


def xorb_path(root: Path, xorb_hash: bytes) -> Path:
    name = hash_to_string(xorb_hash)
    return root / "xorbs" / name[:2] / name


def test_name_and_unbound_message(tmp_path: Path) -> None:
    root = tmp_path / "store"

    async def body(b: EmbeddedBackend) -> None:
        assert b.name == f"embedded:{root}"
        with pytest.raises(NotBound, match=r"`arkfs publish DIR --ark ark:99999/fk4none`"):
            await b.archive("ark:99999/fk4none")

    run(root, body)


def test_damaged_footer_is_a_bad_reply(tmp_path: Path) -> None:
    root, content = stored(tmp_path)
    f = content.files["file"]
    x = content.xorbs[0]
    rec = run(root, lambda b: b.reconstruction(f.hash, 0, len(f.data)))
    path = xorb_path(root, x.hash)
    data = bytearray(path.read_bytes())
    data[-60] ^= 0xFF  # inside the footer's chunk boundaries
    path.write_bytes(bytes(data))

    async def body(b: EmbeddedBackend) -> None:
        with pytest.raises(BadReply, match="arkfs store check"):
            await b.footer(x.hash, rec.fetch[x.hash][0])
        with pytest.raises(BadReply, match="arkfs store check"):
            await b.reconstruction(f.hash, 0, len(f.data))

    run(root, body)


def test_missing_xorb_is_a_bad_reply(tmp_path: Path) -> None:
    root, content = stored(tmp_path)
    f = content.files["file"]
    x = content.xorbs[-1]

    async def body(b: EmbeddedBackend) -> None:
        rec = await b.reconstruction(f.hash, 0, len(f.data))
        xorb_path(root, x.hash).unlink()
        with pytest.raises(BadReply, match="missing"):
            await b.fetch(x.hash, rec.fetch[x.hash][0])

    run(root, body)


def test_empty_file_binds_without_storage(tmp_path: Path) -> None:
    """Like the server: the empty file needs no xorb or shard to be bound."""
    empty = File(b"", bytes(32), ())

    async def body(b: EmbeddedBackend) -> None:
        manifest = manifest_of({"empty": empty})
        await b.bind(manifest, erc_of())
        assert (await b.archive(manifest.ark)).manifest == manifest

    run(tmp_path / "store", body)


def test_dedup_reply_is_what_a_server_would_send(tmp_path: Path) -> None:
    root, content = stored(tmp_path)

    async def body(b: EmbeddedBackend) -> None:
        shard = await b.query_dedup(content.files["file"].chunks[0])
        assert shard is not None
        assert parse_shard(serialize_stored(shard)) == shard

    run(root, body)


def test_parallel_reads(tmp_path: Path) -> None:
    root, content = stored(tmp_path, seed=2)
    f = content.files["file"]
    spans = [(i * 9_000, i * 9_000 + 20_000) for i in range(40)]

    async def body(b: EmbeddedBackend) -> None:
        got: dict[int, bytes] = {}

        async def one(i: int) -> None:
            got[i] = await read_range(b, f.hash, *spans[i])

        async with trio.open_nursery() as nursery:
            for i in range(len(spans)):
                nursery.start_soon(one, i)
        assert all(got[i] == f.data[s:e] for i, (s, e) in enumerate(spans))

    run(root, body)
