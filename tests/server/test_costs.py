"""Costs independent of the number of ARKs (#28): a `/metrics` scrape after a new version,
and the home page, ask the store aggregate questions, never one question per ARK."""

import time
from collections import Counter
from pathlib import Path
from typing import Any, cast

import httpx
import trio

from arkfs.server.app import build_app
from arkfs.server.auth import Authorizer
from arkfs.store.base import Binding, Store
from arkfs.store.local import LocalStore

ARKS = 40


class Counting:
    """A store that counts the calls made of it, and passes them on."""

    def __init__(self, store: Store) -> None:
        self.store, self.calls = store, Counter[str]()

    def __getattr__(self, name: str) -> Any:
        self.calls[name] += 1
        return getattr(self.store, name)


def bind_many(store: LocalStore, naans: list[str]) -> int:
    """ARKS ARKs spread over naans, bound directly; the bytes of all their versions."""
    total = 0
    for i in range(ARKS):
        size = 1000 + i
        store.bind(
            Binding(f"ark:{naans[i % len(naans)]}/x{i}", b"m", "erc:", time.time(), bytes=size)
        )
        total += size
    return total


def test_scrape_and_home_page_ask_no_question_per_ark(tmp_path: Path) -> None:
    with LocalStore.open(tmp_path / "store") as local:
        total = bind_many(local, ["12345", "b5072"])
        store = Counting(local)
        app = build_app(cast(Store, store), Authorizer(open_read=True))

        async def main() -> tuple[httpx.Response, httpx.Response]:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://arkfs") as client:
                return await client.get("/metrics"), await client.get("/")

        metrics, home = trio.run(main)
    assert metrics.status_code == 200 and home.status_code == 200
    assert f"arkfs_store_archived_bytes {float(total)}" in metrics.text
    assert "12345" in home.text and "b5072" in home.text
    per_ark = {n: c for n, c in store.calls.items() if n in ("list_versions", "get_binding")}
    assert per_ark == {} and store.calls["list_bindings"] == 0, store.calls
