"""The mount's archive cache reads the cached copies of manifests written before the
manifest kept hard links, attributes and the root directory."""

from pathlib import Path

import pytest

from arkfs.archive.manifest import Manifest
from arkfs.archive.record import Archive, VersionInfo
from arkfs.ark.erc import Erc
from arkfs.mount.names.archive_cache import ArchiveCache

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`

OLD = Path(__file__).parents[2] / "data" / "manifest-v2-before-links.msgpack"


def test_a_cached_copy_of_a_manifest_from_before_links_is_read(tmp_path: Path) -> None:
    old = OLD.read_bytes()
    manifest = Manifest.from_msgpack(old)
    info = VersionInfo(manifest.ark, 1, 123.5, "", None, manifest.file_count, 5)
    cache = ArchiveCache(tmp_path)
    cache.write(Archive(manifest, Erc(who="w", what="x"), info), "embedded", latest=True)
    [written] = (tmp_path / "archives").iterdir()
    assert old in written.read_bytes()  # the cached copy holds the manifest as it came
    got = cache.read(manifest.ark)
    assert got is not None
    archive, source = got
    assert archive.manifest == manifest and archive.manifest.root is None and source == "embedded"
    assert archive.manifest.entries.link_count(2) == 1
