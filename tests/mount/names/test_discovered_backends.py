"""The mount's discovery: an ARK no resolver knows is answered from memory for a while,
and an ARK at an arkfs server is a backend while one elsewhere is an object."""

import json
from pathlib import Path

import pytest
import trio

from arkfs.ark.thump import ARKFS_HEADER
from arkfs.backend.base import NotBound
from arkfs.mount.names.discovery import DiscoveredBackends
from arkfs.net.bearer import OriginTokens
from arkfs.resolver.discover import Resolver
from tests.support.redirector import redirector


def test_unknown_arks_are_not_resolved_again_at_once(tmp_path: Path) -> None:
    registry = tmp_path / "registry.json"
    registry.write_text(json.dumps([{"what": "b1234", "target": {"url": "http://127.0.0.1:9/"}}]))

    async def main() -> None:
        found = DiscoveredBackends(
            Resolver([str(registry)], None, tmp_path, allow_private=True), OriginTokens()
        )
        try:
            with pytest.raises(NotBound, match="no NAAN registry has a record for 12345"):
                await found.backend_for("ark:12345/x6")
            registry.write_text(json.dumps([{"what": "12345", "target": {"url": "http://x/"}}]))
            with pytest.raises(NotBound, match="no NAAN registry has a record for 12345"):
                await found.object_for("ark:12345/x6/@v2")  # the same archive, from memory
        finally:
            await found.aclose()

    trio.run(main)


def test_arkfs_servers_give_backends_and_other_responders_objects(tmp_path: Path) -> None:
    with redirector() as arkfs, redirector() as web:
        arkfs.pages["/.well-known/ark"] = "/\n"
        arkfs.headers["/.well-known/ark"] = {ARKFS_HEADER: "1"}
        arkfs.pages["/ark:12345/x6"] = "an archive's landing page"
        web.pages["/b7"] = "<html>a landing page</html>"
        registry = tmp_path / "registry.json"
        registry.write_text(
            json.dumps(
                [
                    {"what": "12345", "target": {"url": arkfs.url + "/${pid}"}},
                    {"what": "b1234", "target": {"url": web.url + "/${value}"}},
                ]
            )
        )

        async def main() -> None:
            found = DiscoveredBackends(
                Resolver([str(registry)], None, tmp_path, allow_private=True), OriginTokens()
            )
            try:
                backend = await found.backend_for("ark:12345/x6")
                assert backend.name == arkfs.url and await found.object_for("ark:12345/x6") is None
                obj = await found.object_for("ark:b1234/b7")
                assert obj is not None and obj.url == web.url + "/b7" and obj.size == 27
                with pytest.raises(NotBound, match="which is no arkfs server"):
                    await found.backend_for("ark:b1234/b7")
            finally:
                await found.aclose()

        trio.run(main)
