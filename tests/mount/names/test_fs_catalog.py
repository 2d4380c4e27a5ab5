"""Resolution below the filesystem: the config file, NAAN routing, the manifest disk cache."""

from pathlib import Path

import pytest
import trio

from arkfs.backend.base import NotBound
from arkfs.backend.embedded import EmbeddedBackend
from arkfs.mount.config import ConfigError, load_config
from arkfs.mount.names.archive_cache import ArchiveCache
from arkfs.mount.names.catalog import Catalog
from arkfs.store.local import LocalStore
from tests.support.archive import publish

pytestmark = pytest.mark.unit  # no FUSE, no subprocess, no server: `make test-fast`


def test_config_maps_naans_to_resolvers(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        'servers = ["https://all.example.org"]\n'
        'store = "arks"\n'
        "metadata_ttl = 2.5\n"
        "[naans]\n"
        '12345 = "http://127.0.0.1:8080"\n'
        'B1234 = ["https://a.example.org", "https://b.example.org"]\n'
    )
    config = load_config(path, explicit=True)
    assert config.servers == ("https://all.example.org",)
    assert config.naans == {
        "12345": ("http://127.0.0.1:8080",),
        "b1234": ("https://a.example.org", "https://b.example.org"),
    }
    assert config.store == tmp_path / "arks"
    assert config.metadata_ttl == 2.5
    assert load_config(tmp_path / "absent.toml", explicit=False).naans == {}


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("[naans]\n'12-3.4' = 'http://x'\n", "not betanumeric"),
        ("servers = 'ftp://x'\n", "not an http"),
        ("servers = []\n", "a URL or a list"),
        ("resolvers = 1\n", "unknown key 'resolvers'"),
        ("naans = 1\n", "must be a table"),
        ("[naans\n", "config file"),
        ("metadata_ttl = -1\n", "metadata_ttl must be"),
        ("metadata_ttl = true\n", "metadata_ttl must be"),
    ],
)
def test_config_errors_say_what_to_fix(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        load_config(path, explicit=True)
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "absent.toml", explicit=True)


def test_catalog_asks_each_naan_of_its_own_backends(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "a.txt").write_text("a\n")
    first, second = tmp_path / "first", tmp_path / "second"
    publish(tree, "ark:12345/x6np1wh8k", "--store", str(first))
    publish(tree, "ark:b1234/x7zz", "--store", str(first))  # b1234 is not first's to answer
    publish(tree, "ark:b1234/x8yy", "--store", str(second))

    async def main() -> None:
        a = EmbeddedBackend(LocalStore.open(first, create=False))
        b = EmbeddedBackend(LocalStore.open(second, create=False))
        catalog = Catalog([a], {"b1234": [b]}, tmp_path / "cache")
        try:
            assert await catalog.naans() == ["12345", "b1234"]
            assert await catalog.names("b1234") == ["x8yy"]
            assert await catalog.names("12345") == ["x6np1wh8k"]
            found = await catalog.archive("ark:b1234/x8yy")
            assert found.backend is b
            assert [e.path for e in found.manifest.entries] == ["a.txt"]
            with pytest.raises(NotBound):
                await catalog.archive("ark:b1234/x7zz")
            assert (await catalog.archive("ark:12345/x6np1wh8k")).backend is a
        finally:
            await catalog.aclose()

    trio.run(main)
    disk = ArchiveCache(tmp_path / "cache")
    assert sorted(disk.keys()) == ["ark:12345/x6np1wh8k", "ark:b1234/x8yy"]
    cached = disk.read("ark:b1234/x8yy")
    assert cached is not None and cached[1] == f"embedded:{second}"
