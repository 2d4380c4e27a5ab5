"""Which version the mount shows as the latest: asked again once the TTL has passed, and a
new one reported once; versions by number never change. On an embedded store, no FUSE."""

from pathlib import Path

import pytest
import trio

from arkfs.backend.embedded import EmbeddedBackend
from arkfs.mount.names.catalog import Catalog
from arkfs.mount.names.latest import LatestVersions
from arkfs.store.local import LocalStore
from tests.support.archive import publish

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

ARK = "ark:12345/x6latest"


def test_the_latest_is_asked_again_after_the_ttl_and_a_new_one_reported_once(
    tmp_path: Path,
) -> None:
    tree, store = tmp_path / "tree", tmp_path / "store"
    tree.mkdir()
    (tree / "a.txt").write_text("one\n")
    publish(tree, ARK, "--store", str(store))

    async def main() -> None:
        catalog = Catalog([EmbeddedBackend(LocalStore.open(store, create=False))], {}, tmp_path)
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
