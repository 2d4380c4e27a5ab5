"""Both backends behind one fixture: an embedded store, and `arkfs serve` over HTTP.

Tests are synchronous and run their async body with Side.run, which opens a fresh backend
inside trio.run and closes it after; content is uploaded through the backend itself.
"""

from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import trio

from arkfs.backend.base import Backend
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.backend.remote import RemoteBackend
from arkfs.store.local import LocalStore
from arkfs.xet.hashing import string_to_hash
from tests.backend.content import Content, build_content, sample_files, upload
from tests.support.corpus import corpus
from tests.support.hfxet import upload_files
from tests.support.recording_cas import Recording, recording_cas
from tests.support.server import arkfs_server

TOKENS = "reader read\nwriter write\n"
T = TypeVar("T")


@dataclass(frozen=True)
class Side:
    """One backend under test: how to open it, and what it runs on."""

    kind: str  # "embedded" or "remote"
    store: Path
    url: str | None = None
    token: str | None = None

    def open(self, **options: Any) -> Backend:
        if self.kind == "embedded":
            return EmbeddedBackend(LocalStore.open(self.store))
        assert self.url is not None
        return RemoteBackend(self.url, options.pop("token", self.token), **options)

    def run(self, body: Callable[[Backend], Awaitable[T]], **options: Any) -> T:
        """Run body(backend) in trio with a backend opened (and closed) for it."""

        async def main() -> T:
            backend = self.open(**options)
            try:
                return await body(backend)
            finally:
                await backend.aclose()

        return trio.run(main)


@pytest.fixture(scope="module", params=["embedded", "remote"])
def side(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Side]:
    root = tmp_path_factory.mktemp(request.param)
    if request.param == "embedded":
        yield Side("embedded", root / "store")
        return
    (root / "tokens").write_text(TOKENS)
    with arkfs_server(root / "store", "--tokens", str(root / "tokens")) as (url, _):
        yield Side("remote", root / "store", url, "writer")


@pytest.fixture(scope="module")
def content(side: Side) -> Content:
    """Sample files uploaded (xorbs, then the shard) through the backend under test."""
    built = build_content(sample_files())
    side.run(lambda b: upload(b, built))
    return built


@dataclass(frozen=True)
class HfUpload:
    """What hf_xet uploaded for some files: their bytes and hashes, and the recording."""

    files: dict[str, tuple[bytes, bytes]]  # name -> (content, XET file hash)
    recording: Recording


@pytest.fixture(scope="session")
def hf_upload(tmp_path_factory: pytest.TempPathFactory) -> HfUpload:
    """hf_xet's xorbs and shards for part of the shared corpus, captured on upload."""
    root = tmp_path_factory.mktemp("hfxet")
    names = ["one-byte", "8193", "131073", "repeated-blocks", "text", "float32"]
    data = corpus()
    paths = []
    for name in names:
        (root / name).write_bytes(data[name])
        paths.append(root / name)
    with recording_cas() as (url, rec):
        infos = upload_files(url, paths)
    files = {n: (data[n], string_to_hash(info.hash)) for n, info in zip(names, infos, strict=True)}
    return HfUpload(files, rec)
