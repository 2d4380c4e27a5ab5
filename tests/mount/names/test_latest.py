"""Which version the mount shows as the latest: asked again once the TTL has passed, and a
new one reported once; versions by number never change. On an embedded store, no FUSE."""

from pathlib import Path

import pytest
import trio

from arkfs.backend.base import NotBound
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.mount.names.catalog import Catalog
from arkfs.mount.names.latest import LatestVersions
from arkfs.store.local import LocalStore
from tests.support.archive import publish

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = "ark:12345/x6latest"


def published(tmp_path: Path) -> tuple[Path, Path]:
    """A tree of one file, published as ARK's v1 to an embedded store: (tree, store)."""
    tree, store = tmp_path / "tree", tmp_path / "store"
    tree.mkdir()
    (tree / "a.txt").write_text("one\n")
    publish(tree, ARK, "--store", str(store))
    return tree, store


def catalog_of(store: Path, tmp_path: Path) -> Catalog:
    return Catalog([EmbeddedBackend(LocalStore.open(store, create=False))], {}, tmp_path)


def test_the_latest_is_asked_again_after_the_ttl_and_a_new_one_reported_once(
    tmp_path: Path,
) -> None:
    tree, store = published(tmp_path)

    async def main() -> None:
        catalog = catalog_of(store, tmp_path)
        moved: list[str] = []
        due = LatestVersions(catalog, 0.0, moved.append)  # every use asks again
        held = LatestVersions(catalog, 3600.0, moved.append)
        try:
            first = await due.get(ARK)
            assert first.version == 1 and (await held.get(ARK)).version == 1
            (tree / "a.txt").write_text("two\n")
            await trio.to_thread.run_sync(publish, tree, ARK, "--store", str(store))
            second = await due.get(ARK)
            assert second.version == 2 and moved == [ARK]
            assert (await held.get(ARK)).version == 1  # within its TTL: as it was
            assert held.time_left(ARK) > 0 and due.time_left(ARK) == 0
            assert await due.get(ARK) is second and moved == [ARK]  # no new one, no report
            assert [v.version for v in await due.versions(ARK)] == [1, 2]
            old = await catalog.archive(ARK, 1)
            assert old.manifest.entries[0].xet_hash != second.manifest.entries[0].xet_hash
            assert old is await catalog.archive(ARK, 1)  # a version is fetched once
        finally:
            await catalog.aclose()

    trio.run(main)


def test_a_version_past_the_latest_is_named_as_missing_with_the_latest(tmp_path: Path) -> None:
    _, store = published(tmp_path)

    async def main() -> None:
        catalog = catalog_of(store, tmp_path)
        try:
            for _ in range(2):  # the second time, the backends' answer is remembered
                with pytest.raises(NotBound, match=f"^{ARK} has no version 9: its latest is v1$"):
                    await catalog.archive(ARK, 9)
            with pytest.raises(NotBound, match=r"^no archive is bound to ark:12345/x6none/@v2$"):
                await catalog.archive("ark:12345/x6none", 2)
        finally:
            await catalog.aclose()

    trio.run(main)
