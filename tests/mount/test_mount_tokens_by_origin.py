"""The mount's config for discovery and tokens: each server the mount talks to gets its
own origin's token only, --token only the --server URLs; real servers record the
Authorization headers they receive."""

from pathlib import Path

import pytest
import trio

from arkfs.backend.base import NotBound
from arkfs.backend.remote import RemoteBackend
from arkfs.mount.backends import MountOptions, open_catalog
from arkfs.mount.config import DEFAULT_FALLBACK, ConfigError, Discovery, load_config
from tests.support.redirector import redirector


def test_each_server_gets_its_own_origins_token_only(tmp_path: Path) -> None:
    with redirector() as s, redirector() as c, redirector() as n, redirector() as d:
        for server in (s, c, n):
            server.pages["/arks?prefix="] = '{"arks": []}'
        d.pages["/ark:b1234/x6"] = "a landing page"  # a 404 there would end resolution
        (tmp_path / "registry.json").write_text(
            f'[{{"what": "b1234", "target": {{"url": "{d.url}/${{pid}}"}}}}]'
        )
        (tmp_path / "d.token").write_text("d-token\n")
        (tmp_path / "config.toml").write_text(
            f"servers = ['{c.url}']\nregistry = 'registry.json'\nfallback = false\n"
            "allow_private = true\n"
            f"[naans]\n12345 = '{n.url}'\n"
            f"[tokens]\n'{c.url}/' = 'c-token'\n'{d.url}' = {{file = 'd.token'}}\n"
        )
        config = load_config(tmp_path / "config.toml", explicit=True)
        opts = MountOptions(
            mountpoint=tmp_path / "mnt",
            servers=(s.url,),
            store=None,
            config=config,
            cache_dir=tmp_path / "cache",
            cache_size=1 << 20,
            log_file=None,
            foreground=True,
            token="cli-token",
        )

        async def main() -> None:
            catalog = await open_catalog(opts)
            try:
                for backend in catalog.backends:
                    assert await backend.list_archives() == []
                with pytest.raises(NotBound):
                    await catalog.archive("ark:b1234/x6")
            finally:
                await catalog.aclose()

        trio.run(main)
    assert s.auth_seen() == {"Bearer cli-token"}
    assert c.auth_seen() == {"Bearer c-token"}
    assert n.auth_seen() == {None}
    assert d.auth_seen() == {"Bearer d-token"} and len(d.seen) >= 3  # hop, well-known, ?info


def test_discovery_is_on_once_a_registry_or_fallback_is_given(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("registry = ['a.json', 'https://r.example.org/naans.json']\n")
    config = load_config(path, explicit=True)
    assert config.registries == (str(tmp_path / "a.json"), "https://r.example.org/naans.json")
    assert Discovery(("b.json",)).sources(config) == (
        ("b.json", *config.registries),
        DEFAULT_FALLBACK,
    )
    assert Discovery(fallback=False).sources(config) == (config.registries, None)
    empty = load_config(tmp_path / "absent.toml", explicit=False)
    assert Discovery().sources(empty) is None
    assert Discovery(fallback="http://127.0.0.1:9/").sources(empty) == ((), "http://127.0.0.1:9/")
    assert Discovery().sources(empty, always=True) == ((), DEFAULT_FALLBACK)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("registry = 3\n", "registry must be a path or URL"),
        ("fallback = 'n2t.net'\n", "fallback must be"),
        ("fallback = true\n", "fallback must be"),
        ("tokens = 1\n", r"\[tokens\] must be a table"),
        ("[tokens]\n'example.org' = 't'\n", "is not an origin"),
        ("[tokens]\n'http://h' = ''\n", "must be a token or"),
        ("[tokens]\n'http://h' = {file = 'missing'}\n", "cannot read the token file"),
    ],
)
def test_discovery_config_errors_say_what_to_fix(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=words):
        load_config(path, explicit=True)


def test_a_servers_token_does_not_follow_its_redirect_to_another_origin() -> None:
    with redirector() as server, redirector() as elsewhere:
        server.redirect("/ark:", f"{elsewhere.url}/ark:")

        async def main() -> None:
            backend = RemoteBackend(server.url, "server-token")
            try:
                with pytest.raises(NotBound):
                    await backend.versions("ark:12345/x6")
            finally:
                await backend.aclose()

        trio.run(main)
    assert server.auth_seen() == {"Bearer server-token"}
    assert elsewhere.seen and elsewhere.auth_seen() == {None}
