"""Fixtures of the ContentReader tests: files uploaded by hf_xet to a real `arkfs serve`.

The store the server writes is read both through RemoteBackend (over HTTP) and through
EmbeddedBackend (a LocalStore opened on the same directory).
"""

import random
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import trio

from arkfs.backend.base import Backend
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.backend.remote import RemoteBackend
from arkfs.mount.data.chunk_cache import ChunkCache
from arkfs.mount.data.reader import ContentReader
from arkfs.mount.stats import MountStats
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import string_to_hash
from tests.support.corpus import corpus
from tests.support.hfxet import upload_files
from tests.support.server import arkfs_server

MIB = 1024 * 1024
BIG = "big-64MiB"


def big_file(size: int = 64 * MIB, seed: int = 64) -> bytes:
    """Random megabytes alternating with compressible ones (16 symbols), so chunks are
    stored both uncompressed and LZ4-compressed."""
    rng = random.Random(seed)
    low = bytes(b & 0x0F for b in range(256))
    parts = []
    for n in range(size // MIB):
        block = rng.randbytes(MIB)
        parts.append(block.translate(low) if n % 2 else block)
    return b"".join(parts)


@dataclass(frozen=True)
class File:
    data: bytes
    hash: bytes
    size: int


@dataclass(frozen=True)
class Published:
    """A store with uploaded files, served at url until the session ends."""

    store: Path
    url: str
    files: dict[str, File]


@pytest.fixture(scope="session")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Published]:
    root = tmp_path_factory.mktemp("reader-cas")
    (root / "tokens").write_text("writer write\n")
    contents = {n: d for n, d in corpus().items() if d}
    contents[BIG] = big_file()
    (root / "files").mkdir()
    paths = []
    for name, data in contents.items():
        paths.append(root / "files" / name)
        paths[-1].write_bytes(data)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens"), "--open-read") as (
        url,
        _proc,
    ):
        infos = upload_files(url, paths, token="writer")
        files = {
            name: File(data, string_to_hash(info.hash), info.file_size)
            for (name, data), info in zip(contents.items(), infos, strict=True)
        }
        for p in paths:
            p.unlink()
        yield Published(root / "store", url, files)


def open_backend(kind: str, store: Path, url: str, **options: float) -> Backend:
    """An EmbeddedBackend on store, or a RemoteBackend on url (reads need no token)."""
    if kind == "embedded":
        return EmbeddedBackend(LocalStore.open(store, create=False))
    return RemoteBackend(url, None, **options)  # type: ignore[arg-type]


OpenReader = Callable[..., AbstractAsyncContextManager[tuple[ContentReader, Backend]]]


@pytest.fixture
def open_reader(tmp_path: Path, published: Published) -> OpenReader:
    """open_reader(kind, cache_dir=..., max_bytes=..., store=..., url=..., **reader_options):
    a running ContentReader and a backend, inside trio; both closed on exit."""

    @asynccontextmanager
    async def opener(
        kind: str,
        *,
        cache_dir: Path | None = None,
        max_bytes: int = 1 << 30,
        store: Path | None = None,
        url: str | None = None,
        backend_options: dict[str, float] | None = None,
        **options: int,
    ) -> AsyncIterator[tuple[ContentReader, Backend]]:
        cache = ChunkCache(cache_dir or tmp_path / "cache", max_bytes)
        reader = ContentReader(cache, MountStats(), **options)
        backend = open_backend(
            kind, store or published.store, url or published.url, **(backend_options or {})
        )
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(reader.run)
                try:
                    yield reader, backend
                finally:
                    await reader.aclose()
        finally:
            await backend.aclose()

    return opener
