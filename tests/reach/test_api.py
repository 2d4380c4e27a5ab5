"""arkfs.open, arkfs.info and arkfs.resolve without FUSE, on `arkfs serve` and on the
embedded store, compared with the source tree."""

import errno
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import arkfs
from arkfs import api
from arkfs.api import Client
from tests.reach.conftest import ARK, TOKEN, Published
from tests.support.archive import publish
from tests.support.faults import fault_proxy


@pytest.fixture(params=["server", "store"])
def client(
    request: pytest.FixtureRequest, reach_archive: Published, tmp_path: Path
) -> Iterator[Client]:
    where: dict[str, Any] = (
        {"server": reach_archive.url, "token": TOKEN} if request.param == "server" else {}
    )
    store: dict[str, Any] = {"store": reach_archive.store} if request.param == "store" else {}
    with Client(**where, **store, cache_dir=tmp_path / "cache") as c:
        yield c


def test_open_reads_the_files_bytes_and_seeks(client: Client, reach_archive: Published) -> None:
    truth = (reach_archive.tree / "data/big.bin").read_bytes()
    with client.open(f"{ARK}/data/big.bin") as f:
        assert f.seekable() and f.read(10) == truth[:10]
        f.seek(2_000_000)
        assert f.read(100_000) == truth[2_000_000:2_100_000]
        f.seek(-5, io.SEEK_END)
        assert f.read() == truth[-5:]
        f.seek(0)
        assert f.read() == truth


def test_spellings_versions_and_symlinks(client: Client, reach_archive: Published) -> None:
    tree = reach_archive.tree
    assert client.open("12345/x6np1wh8k/readme.txt").read() == (tree / "readme.txt").read_bytes()
    assert client.open(f"{ARK}/@v1/readme.txt").read() == reach_archive.first_readme
    assert client.open(f"{ARK}/link").read() == (tree / "readme.txt").read_bytes()
    name = "data/name with spaces-and-hyphens.txt"
    assert client.open(f"{ARK}/{name}").read() == (tree / name).read_bytes()
    assert client.open(f"{ARK}/c3/s5.v7.xsl").read() == (tree / "c3/s5.v7.xsl").read_bytes()


def test_info_gives_the_erc_versions_and_entry(client: Client) -> None:
    got = client.info(f"{ARK}/data/one")
    assert got.resolved.version == 2 and got.resolved.path == "data/one"
    assert got.resolved.entry is not None and got.resolved.entry.size == 1
    assert got.resolved.entry.mode == 0o600
    assert [v.version for v in got.versions] == [1, 2]
    assert got.erc.who == "Lab of Sines"


def test_resolve_names_the_version_and_backend(client: Client, reach_archive: Published) -> None:
    got = client.resolve(f"{ARK}/@v1/c3")
    assert got.ark == f"{ARK}/@v1/c3" and got.version == 1 and got.entry is not None
    assert got.archive == ARK
    if "server" in got.backend or got.backend.startswith("http"):
        assert got.backend.rstrip("/") == reach_archive.url.rstrip("/")


def test_missing_directories_and_bad_modes_are_oserrors(client: Client) -> None:
    for malformed in ("notanark", f"{ARK}/@vx/readme.txt"):
        with pytest.raises(arkfs.BadArk) as caught:
            client.open(malformed)
        assert caught.value.errno == errno.EINVAL
    with pytest.raises(FileNotFoundError):
        client.open(f"{ARK}/no/such/file")
    with pytest.raises(FileNotFoundError):
        client.open("ark:12345/nothingboundhere/x")
    with pytest.raises(IsADirectoryError):
        client.open(f"{ARK}/c3")
    with pytest.raises(ValueError, match="read-only"):
        client.open(f"{ARK}/readme.txt", "w")  # type: ignore[call-overload]


def test_a_flipped_byte_is_an_eio_never_data(reach_archive: Published, tmp_path: Path) -> None:
    with (
        fault_proxy(reach_archive.url) as proxy,
        Client(proxy.url, token=TOKEN, cache_dir=tmp_path / "cache") as c,
    ):
        f = c.open(f"{ARK}/data/big.bin")
        proxy.inject("flip", "xorb")
        with pytest.raises(OSError) as caught:
            f.read()
        assert caught.value.errno == errno.EIO
        assert "\n" not in str(caught.value)


def test_module_functions_use_the_default_client(
    reach_archive: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "arkfs.toml"
    url, cache = reach_archive.url, tmp_path / "cache"
    config.write_text(
        f'servers = ["{url}"]\ncache_dir = "{cache}"\n[tokens]\n"{url}" = "{TOKEN}"\n'
    )
    monkeypatch.setenv("ARKFS_CONFIG", str(config))
    monkeypatch.setattr("arkfs.api._default", None)
    try:
        with arkfs.open(f"{ARK}/readme.txt") as f:
            assert f.read() == (reach_archive.tree / "readme.txt").read_bytes()
        assert arkfs.info(ARK).resolved.entry is None
        assert arkfs.resolve(f"{ARK}/@v1").version == 1
    finally:
        if api._default is not None:
            api._default.close()


def test_a_fallback_is_a_url_or_off_as_on_the_command_line(
    reach_archive: Published, tmp_path: Path
) -> None:
    with Client(store=reach_archive.store, cache_dir=tmp_path / "c", fallback="off") as c:
        assert c.resolve(f"{ARK}/readme.txt").version == 2
        with pytest.raises(FileNotFoundError, match="no archive is bound"):
            c.resolve("ark:99999/elsewhere")  # no resolver asked, not 'off' taken for one
    with pytest.raises(ValueError, match=r"'n2t\.net' is not an http"):
        Client(store=reach_archive.store, cache_dir=tmp_path / "c", fallback="n2t.net")


def test_text_mode_reads_str(client: Client, reach_archive: Published) -> None:
    truth = (reach_archive.tree / "data/name with spaces-and-hyphens.txt").read_text()
    with client.open(f"{ARK}/data/name with spaces-and-hyphens.txt", "r") as f:
        assert f.read() == truth and isinstance(truth, str)
    with client.open(f"{ARK}/readme.txt", "rt", encoding="ascii") as f:
        assert f.readline() == (reach_archive.tree / "readme.txt").read_text()


def test_a_version_past_the_latest_is_named_with_the_latest(client: Client) -> None:
    with pytest.raises(FileNotFoundError, match=f"^.*{ARK} has no version 9: its latest is v2$"):
        client.open(f"{ARK}/@v9/readme.txt")
    with pytest.raises(FileNotFoundError, match="no archive is bound to ark:12345/x6none/@v2"):
        client.open("ark:12345/x6none/@v2/readme.txt")


def test_a_listed_file_opens_without_a_locate_and_must_still_be_that_file(
    client: Client, reach_archive: Published
) -> None:
    """open_listed locates the file at its first read, in that read's call; an entry that
    is not the file the ARK names is refused, never read."""
    found, entries = client.tree(ARK)
    base = f"{ARK}/@v{found.version}"
    files = {e.path: e for e in entries if e.kind.name == "FILE"}
    for path in ("data/big.bin", "data/name with spaces-and-hyphens.txt", "c3/s5.v7.xsl"):
        with client.open_listed(f"{base}/{path}", files[path]) as f:
            assert f.read() == (reach_archive.tree / path).read_bytes()
    wrong = client.open_listed(f"{base}/readme.txt", files["c3/s5.v7.xsl"])
    with wrong, pytest.raises(FileNotFoundError, match="no longer that file"):
        wrong.read()


@pytest.mark.parametrize("ttl", [0.0, 300.0])
def test_the_latest_version_is_asked_again_after_the_metadata_ttl(
    tmp_path: Path, ttl: float
) -> None:
    tree, store, ark = tmp_path / "tree", tmp_path / "store", "ark:12345/x6ttl"
    tree.mkdir()
    (tree / "a.txt").write_text("one")
    publish(tree, ark, "--store", str(store))
    with Client(store=store, cache_dir=tmp_path / "cache", metadata_ttl=ttl) as c:
        assert c.resolve(f"{ark}/a.txt").version == 1
        (tree / "a.txt").write_text("two")
        publish(tree, ark, "--store", str(store))
        with c.open(f"{ark}/a.txt") as f:  # the latest as last asked, until the TTL is up
            assert (f.read(), c.resolve(ark).version) == ((b"two", 2) if ttl == 0 else (b"one", 1))
        assert c.resolve(f"{ark}/@v2/a.txt").version == 2  # a version named is always found
        assert [v.version for v in c.info(ark).versions] == [1, 2]  # info asks now


def test_a_metadata_ttl_is_seconds_at_least_zero(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="metadata_ttl -1 is not a number of seconds >= 0"):
        Client(cache_dir=tmp_path / "cache", metadata_ttl=-1)
