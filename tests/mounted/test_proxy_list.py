"""The `proxies` setting (#28): a list of proxies tried in order, as CVMFS_HTTP_PROXY. With
the first dead (a closed port) and the second real squid, `arkfs publish` ($ARKFS_PROXIES)
sends through squid, and a mount and `arkfs get` (config key `proxies`)
read through it."""

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.archive import publish
from tests.support.cli import run_arkfs
from tests.support.mount import arkfs_mount
from tests.support.server import Server, free_port
from tests.support.squid import squid

ARK = "ark:12345/x6proxies"


@pytest.fixture
def no_env_proxies(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Only the list decides: no HTTP_PROXY and its kin."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ARKFS_PROXIES"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    yield


def proxied(log: Path, server: str) -> list[str]:
    """The URLs squid was asked for on server (its native log's seventh field)."""
    lines = log.read_text().splitlines() if log.exists() else []
    return [line.split()[6] for line in lines if line.split()[6].startswith(server)]


@pytest.mark.usefixtures("no_env_proxies")
def test_reads_fail_over_to_the_second_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tokens").write_text("writer write\nreader read\n")
    tree = tmp_path / "tree"
    tree.mkdir()
    data = random.Random(4).randbytes(2 * 1024 * 1024)
    (tree / "f.bin").write_bytes(data)
    dead = f"http://127.0.0.1:{free_port()}"
    args = ("--open-read", "--tokens", str(tmp_path / "tokens"))
    with Server(tmp_path / "store", *args) as server, squid() as (proxy, log):
        monkeypatch.setenv("ARKFS_PROXIES", f"{dead};{proxy}")
        publish(tree, ARK, "--server", server.url, "--token", "writer")
        published = proxied(log, server.url)
        assert any(f"/{ARK}" in url for url in published), published  # the bind too
        monkeypatch.delenv("ARKFS_PROXIES")
        config = tmp_path / "config.toml"
        config.write_text(f'proxies = ["{dead}", "{proxy}", "DIRECT"]\n')
        mount = (
            "--server",
            server.url,
            "--config",
            str(config),
            "--cache-dir",
            str(tmp_path / "c"),
        )
        with arkfs_mount(tmp_path / "mnt", *mount) as m:
            assert (m.path / ARK / "f.bin").read_bytes() == data
        asked = proxied(log, server.url)[len(published) :]
        assert any("/v1/reconstructions/" in url for url in asked), asked
        assert any("/v1/xorb-data/" in url for url in asked), asked  # the ranged fetcher too

        out = tmp_path / "got.bin"  # get reads the config key too
        get = ("get", f"{ARK}/f.bin", str(out), "--server", server.url, "--config", str(config))
        got = run_arkfs(*get, "--no-cache", "-q")
        assert got.returncode == 0, got.stderr
        assert out.read_bytes() == data
        assert len(proxied(log, server.url)) > len(published) + len(asked)  # get's too


@pytest.mark.usefixtures("no_env_proxies")
def test_a_proxy_list_that_is_not_one_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('proxies = ["squid:3128"]\n')
    done = run_arkfs("config", "show", "--config", str(config))
    assert done.returncode == 2 and "'squid:3128' is not DIRECT or a proxy URL" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
